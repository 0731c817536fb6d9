package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/ctlsock"
	"github.com/rhi-daemon/rhi/internal/daemon"
	"github.com/rhi-daemon/rhi/internal/guardbird"
	"github.com/rhi-daemon/rhi/internal/logfile"
	"github.com/rhi-daemon/rhi/internal/owned"
	"github.com/rhi-daemon/rhi/internal/probe"
	"github.com/rhi-daemon/rhi/internal/verify"
	"github.com/rhi-daemon/rhi/internal/vip"

	"github.com/rhi-daemon/rhi/internal/statushttp"
)

// netlinkTimeout bounds each netlink request.
const netlinkTimeout = 2 * time.Second

func cmdRun(args []string, stdout, stderr io.Writer) int {
	// First of all: until signal.Notify, SIGHUP and SIGUSR1 (which logrotate
	// sends) kill the process, Go's default for them. One that arrives while
	// the logs, netlink and the status server are being set up waits here
	// for handleSignals.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sigs)

	fs := flags("run", "[--config PATH] [--debug] [--dry-run]", stdout, stderr)
	path := fs.String("config", defaultConfig, "configuration file")
	debug := fs.Bool("debug", false, "log per-tick detail")
	dryRun := fs.Bool("dry-run", false, "poll, decide, confirm and log, but never change the interface")
	if code, ok := parse(fs, args, stdout); !ok {
		return code
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return exitBadInput
	}
	gogc := collector()
	memLimit, memLimitErr := memoryLimit()
	logs, err := openLogs(cfg, *debug, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "rhi: %v\n", err)
		return exitBadInput
	}
	defer logs.Close()
	log := logs.Logger
	if memLimitErr != nil {
		log.WithError(memLimitErr).Warn("cannot read the cgroup's memory limit; set GOMEMLIMIT to give Go one")
	}

	if !*dryRun { // a dry run changes nothing: it neither fights nor blocks the real one
		unlock, warned, err := lockRun(cfg.StateFile)
		if err != nil {
			log.WithError(err).Error("cannot start")
			return exitFailure
		}
		defer unlock()
		if warned != nil {
			log.WithError(warned).Error("running without the instance lock")
		}
	}
	deps, closeDeps, code := newDeps(cfg, *dryRun, log)
	if deps == nil {
		return code
	}
	defer closeDeps()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	d, metrics := newDaemon(cfg, deps)
	for _, w := range config.Warnings(cfg) {
		log.Warn(w)
	}
	reloads := &reloadState{now: time.Now}
	waitServers := startServers(ctx, cfg, func() http.Handler { return statushttp.Handler(withReload{d, reloads}, metrics, time.Now) }, log)
	go handleSignals(ctx, sigs, *path, cfg, d, reloads, metrics, logs, log)
	go watchdog(ctx, d, time.Now, log)
	go vip.Watch(ctx, cfg.Interface, d.Hint, log)
	if degradedOn(cfg) {
		go vip.Watch(ctx, cfg.Degraded.Interface, d.Hint, log)
	}
	if lastResortOwn(cfg) && cfg.FailOpen.Enabled() {
		go vip.Watch(ctx, cfg.LastResort.Interface, d.Hint, log)
	}
	defer notifyStopping()

	log.WithFields(logrus.Fields{"version": version, "config": *path, "vips": len(cfg.VIPs), "iface": cfg.Interface, "gogc": gogc, "gomemlimit": memLimit}).Info("rhi starting")
	err = d.Run(ctx)
	stop()
	waitServers() // the control socket's file goes with its server
	if err != nil {
		log.WithError(err).Error("stopped with an error")
		return exitFailure
	}
	return exitOK
}

// openLogs creates the log files' directories if they are missing and
// opens main_log and error_log. Every line goes to stderr too; when main
// found stderr to be the journal, each carries its priority (which the
// PriorityWriter lets through).
func openLogs(cfg *config.Config, debug bool, stderr io.Writer) (*logfile.Logs, error) {
	madeDirs, err := ensureLogDirs([][2]string{{"main_log", cfg.MainLog}, {"error_log", cfg.ErrorLog}})
	if err != nil {
		return nil, err
	}
	_, journal := stderr.(*logfile.PriorityWriter)
	logs, err := logfile.New(logfile.Options{MainPath: cfg.MainLog, ErrorPath: cfg.ErrorLog, Debug: debug,
		Format: string(cfg.LogFormat), Stderr: stderr, Journal: journal})
	if err != nil {
		return nil, err
	}
	for _, dir := range madeDirs {
		logs.Logger.WithField("dir", dir).Info("created the log directory")
	}
	return logs, nil
}

// newDeps builds what the daemon works through: the control API client,
// the netlink handle and the announcer on it, the ownership record and
// BIRD's socket. A dry run gets an announcer and a record that change
// nothing. On failure it logs why and returns nil and the exit code; on
// success, release closes the netlink handle.
func newDeps(cfg *config.Config, dryRun bool, log *logrus.Logger) (deps *daemon.Deps, release func(), code int) {
	health, err := newHealth(cfg)
	if err != nil {
		log.WithError(err).Error("cannot start")
		return nil, nil, exitBadInput
	}
	nl, err := vip.NewHandle(netlinkTimeout)
	if err != nil {
		log.WithError(err).Error("cannot start")
		return nil, nil, exitFailure
	}
	var ann daemon.Announcer = vip.New(nl, cfg.Interface, log)
	// The degraded interface is always managed, so that a reload may turn
	// the tier on; while it is off and rhi1 is missing, nothing is said.
	var deg daemon.Announcer = vip.New(nl, cfg.Degraded.Interface, log)
	// So is the last-resort interface, unless it is one of the other two
	// (allowed while the guard is off): two announcers must never share
	// an interface.
	var lr daemon.Announcer
	if lastResortOwn(cfg) {
		lr = vip.New(nl, cfg.LastResort.Interface, log)
	}
	var record daemon.OwnershipRecord = owned.File(cfg.StateFile)
	if dryRun {
		record = owned.ReadOnly(cfg.StateFile) // a dry run changes no file either
		ann = vip.NewDryRun(nl, cfg.Interface, log)
		deg = vip.NewDryRun(nl, cfg.Degraded.Interface, log)
		if lr != nil {
			lr = vip.NewDryRun(nl, cfg.LastResort.Interface, log)
		}
		log.Warn("dry run: rhi will not change the interface")
	}
	return &daemon.Deps{
		Ready:      func() { notifyReady(log) },
		Health:     health,
		NewHealth:  healthFor(log),
		Announcer:  ann,
		Degraded:   deg,
		LastResort: lr,
		Record:     record,
		Log:        log,
		DryRun:     dryRun,
		Confirmer:  birdSocket{verify.Socket{Path: cfg.Bird.Socket}},
		Prober:     probe.New(probe.Options{Version: version}),
		Guard:      guardView{guardbird.Viewer{Path: cfg.Bird.Socket, Timeout: cfg.Bird.Timeout, SiteID: uint32(cfg.SiteID)}},
	}, func() { nl.Close() }, exitOK
}

// lastResortOwn reports whether last_resort.interface is an interface of
// its own, neither the main nor the degraded one.
func lastResortOwn(cfg *config.Config) bool {
	return cfg.LastResort.Interface != cfg.Interface && cfg.LastResort.Interface != cfg.Degraded.Interface
}

// newDaemon builds the daemon on deps and the metrics that /metrics shows.
// The two refer to each other: the metrics read the daemon's status when
// they are scraped, and the daemon reports each poll to them. So the
// daemon comes first, with a poll hook that reads metrics, which is set
// right after: the daemon polls only in Run, which the caller starts
// later.
func newDaemon(cfg *config.Config, deps *daemon.Deps) (*daemon.Daemon, *statushttp.Metrics) {
	var metrics *statushttp.Metrics
	deps.OnPoll = func(took time.Duration, unreadable int) { metrics.ObservePoll(took, unreadable) }
	d := daemon.New(cfg, *deps)
	metrics = statushttp.NewMetrics(d, version)
	return d, metrics
}

// startServers serves a handler from h on status_listen (for Prometheus
// and probes) and another on control_socket (for the CLI), each when set,
// until ctx is done. Each has its own shared documents: slow readers on
// status_listen never make the CLI read an older /status.
// Neither can stop the routing loop: a listener that cannot be opened is
// logged and retried. The function returned waits until both have stopped.
func startServers(ctx context.Context, cfg *config.Config, h func() http.Handler, log logrus.FieldLogger) (wait func()) {
	var wg sync.WaitGroup
	serve := func(name string, listen statushttp.Listen) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statushttp.Serve(ctx, name, listen, h(), statushttp.Options{}, log)
		}()
	}
	if cfg.StatusListen != "" {
		serve("status_listen", statushttp.TCP(cfg.StatusListen))
	}
	if cfg.ControlSocket != "" {
		serve("control_socket", func() (net.Listener, error) { return ctlsock.Listen(cfg.ControlSocket) })
	}
	return wg.Wait
}

// The APISIX client is the daemon's health source with plans: were its
// methods to drift from daemon.Planner, the daemon would poll it key by
// key, without plans, spreading or budget.
var _ daemon.Planner = (*apisix.Client)(nil)

// newHealth builds the control API client from the keys config.Diff names
// as the client's (URL, timeout, poll mode). It does no I/O.
func newHealth(cfg *config.Config) (*apisix.Client, error) {
	return apisix.NewClient(cfg.ControlURL, apisix.Options{Timeout: cfg.Timeout, Mode: apisix.Mode(cfg.PollMode)})
}

// healthFor is the daemon's NewHealth: it builds the client for a reloaded
// configuration whose control API keys changed. config.Load checks every
// value NewClient does, so a loaded configuration always gets one
// (TestLoadedConfigsBuildAClient); were that to fail, the old client keeps
// polling and the log says why.
func healthFor(log logrus.FieldLogger) func(*config.Config) daemon.HealthSource {
	return func(cfg *config.Config) daemon.HealthSource {
		h, err := newHealth(cfg)
		if err != nil {
			log.WithError(err).Error("control API client; the previous one keeps polling")
			return nil
		}
		return h
	}
}

// handleSignals reloads on SIGHUP (a bad file keeps the old config) and
// reopens the logs on SIGUSR1, as they arrive on ch. Each reload's outcome
// goes to reloads (for /status), to systemd and to metrics.
func handleSignals(ctx context.Context, ch <-chan os.Signal, path string, started *config.Config, d *daemon.Daemon, reloads *reloadState, metrics *statushttp.Metrics, logs *logfile.Logs, log logrus.FieldLogger) {
	serveSignals(ctx, ch, func() {
		ok := reloadAttempt(ctx, path, started, d, reloads, sdNotify, log)
		if ctx.Err() == nil { // else the daemon stopped before the outcome
			metrics.Reloaded(ok, time.Now())
		}
	}, func() {
		if err := logs.Reopen(); err != nil {
			log.WithError(err).Error("reopening log files")
			return
		}
		log.Info("log files reopened")
	})
}

// serveSignals calls reopen for each SIGUSR1 and reload for SIGHUP until
// ctx is done, then waits for a reload in progress. A reload reads the
// config file, which may be slow: it runs on a goroutine of its own, so
// that logrotate's SIGUSR1 is served whatever a reload is doing. SIGHUPs
// that arrive during a reload make one more after it, not one each.
func serveSignals(ctx context.Context, ch <-chan os.Signal, reload, reopen func()) {
	hups := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hups:
				reload()
			}
		}
	}()
	defer func() { <-done }()
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-ch:
			switch s {
			case syscall.SIGHUP:
				select {
				case hups <- struct{}{}:
				default: // one is pending already: it reads the file as it is now
				}
			case syscall.SIGUSR1:
				reopen()
			}
		}
	}
}

// reloader is the daemon as reload sees it.
type reloader interface {
	Reload(*config.Config) <-chan struct{}
}

// reload loads the config at path and hands it to d; applied is what
// d.Reload returned. A file that does not load, or that changes a key bound
// at start-up (config.IsRestartOnly), is logged with every problem and
// rejected: err says why, and the old configuration keeps running.
func reload(path string, started *config.Config, d reloader, log logrus.FieldLogger) (applied <-chan struct{}, err error) {
	cfg, err := config.Load(path, apisix.UpstreamKey)
	if err != nil {
		log.WithField("config", path).WithError(err).Error("reload rejected; the old configuration keeps running")
		return nil, err
	}
	if c := config.Diff(started, cfg); !c.Reloadable() {
		keys := strings.Join(c.RestartOnly, ", ")
		log.WithFields(logrus.Fields{"config": path, "keys": keys}).Error("reload rejected: these keys take effect only on restart; the old configuration keeps running")
		return nil, fmt.Errorf("%s: these keys take effect only on restart: %s", path, keys)
	}
	// Keys that are accepted but no longer used (fail_open.release) are
	// named again, with their line: the file being reloaded may be the
	// first to carry them.
	for _, w := range cfg.Deprecated {
		log.WithField("config", path).Warn(w)
	}
	return d.Reload(cfg), nil
}

// degradedOn reports whether some VIP of cfg can be degraded.
func degradedOn(cfg *config.Config) bool {
	for i := range cfg.VIPs {
		if cfg.VIPs[i].Degraded.On() {
			return true
		}
	}
	return false
}
