package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/ctlsock"
	"github.com/rhi-daemon/rhi/internal/safefile"
	"github.com/rhi-daemon/rhi/internal/status"
)

// reloadPoll is how often `rhi reload` asks /status for the outcome.
const reloadPoll = 100 * time.Millisecond

// maxReloadConfig bounds what reloadSocket reads of a file that does not
// load (config.Load's bound).
const maxReloadConfig = 16 << 20

// Exit codes of `rhi reload`.
const (
	reloadApplied     = exitOK
	reloadRejected    = exitFailure
	reloadUnreachable = exitBadInput // or no outcome within --timeout
)

func cmdReload(args []string, stdout, stderr io.Writer) int {
	fs := flags("reload", "[--config PATH] [--timeout D]", stdout, stderr)
	path := fs.String("config", defaultConfig, "configuration file (for control_socket); the daemon reloads the file it was started with")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the daemon's outcome")
	if code, ok := parse(fs, args, stdout); !ok {
		return code
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "rhi reload: --timeout must be positive (got %s)\n", *timeout)
		return exitBadInput
	}
	socket := reloadSocket(*path)
	if socket == "" {
		fmt.Fprintf(stderr, "rhi reload: control_socket is empty in %s: the daemon cannot be asked\n", *path)
		return reloadUnreachable
	}
	ctx, cancel := waitClock.withTimeout(context.Background(), *timeout)
	defer cancel()
	poll := waitClock.pacer(reloadPoll)
	defer poll.stop()
	r := reloadCLI{client: ctlsock.Client{Path: socket}, hup: hup, poll: poll}
	return r.run(ctx, stdout, stderr)
}

// hup sends SIGHUP to pid.
func hup(pid int) error { return syscall.Kill(pid, syscall.SIGHUP) }

// reloadSocket is the control socket named by the file at path. A file
// that does not load is what the daemon is about to reject, and `rhi
// reload` must still ask it why: then the socket is the control_socket the
// file's YAML names, if it can be read, else the default.
func reloadSocket(path string) string {
	if cfg, err := config.Load(path, apisix.UpstreamKey); err == nil {
		return cfg.ControlSocket
	}
	socket := config.Default().ControlSocket
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return socket
	}
	data, _, err := safefile.Read(target, maxReloadConfig)
	if err != nil {
		return socket
	}
	var keys struct {
		ControlSocket *string `yaml:"control_socket"`
	}
	if yaml.Unmarshal(data, &keys) == nil && keys.ControlSocket != nil {
		socket = *keys.ControlSocket
	}
	return socket
}

// reloadCLI is `rhi reload` once it knows the socket: it asks the daemon,
// signals it and waits for the outcome.
type reloadCLI struct {
	client ctlsock.Client
	hup    func(pid int) error // signals the daemon
	poll   pacer               // when to ask /status again
}

// run reads the daemon's reload generation G and its pid (from the
// socket's peer credentials, which the kernel vouches for: never a pid
// file), sends SIGHUP, and asks /status until an attempt later than G has
// ended or ctx ends. Exit 0 applied, 1 rejected (with every reason), 2 the
// daemon not reachable or no outcome in time.
func (r reloadCLI) run(ctx context.Context, stdout, stderr io.Writer) int {
	pid, err := r.pid(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "rhi reload: daemon not reachable on %s: %v\n", r.client.Path, err)
		return reloadUnreachable
	}
	_, before, err := fetchStatus(ctx, r.client.Path)
	if err != nil {
		fmt.Fprintf(stderr, "rhi reload: daemon not reachable on %s: %v\n", r.client.Path, err)
		return reloadUnreachable
	}
	if err := r.hup(pid); err != nil {
		fmt.Fprintf(stderr, "rhi reload: signalling the daemon (pid %d): %v\n", pid, err)
		return reloadUnreachable
	}
	last, err := r.wait(ctx, before.Reload.Generation)
	if err != nil {
		fmt.Fprintf(stderr, "rhi reload: no outcome from the daemon (pid %d) on %s: %v\n", pid, r.client.Path, err)
		return reloadUnreachable
	}
	if last.AppliedGeneration != last.Generation {
		// One reason a line: fetchStatus escaped the newlines, as every
		// control character.
		reasons := strings.ReplaceAll(last.LastError, `\n`, "\n")
		fmt.Fprintf(stderr, "rhi reload: reload %d rejected; the old configuration keeps running:\n%s\n", last.Generation, reasons)
		return reloadRejected
	}
	fmt.Fprintf(stdout, "reload %d applied\n", last.Generation)
	return reloadApplied
}

// pid is the pid of the process that listens on the control socket, if it
// is trusted (see ctlsock.Client).
func (r reloadCLI) pid(ctx context.Context) (int, error) {
	conn, err := r.client.Dial(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	return ctlsock.PeerPID(conn.(*net.UnixConn))
}

// wait asks /status at every poll until an attempt after generation gen
// has ended, and returns the reloads then; an error when ctx ends first,
// with the last thing seen.
func (r reloadCLI) wait(ctx context.Context, gen uint64) (status.ReloadStatus, error) {
	seen := fmt.Sprintf("generation still %d", gen)
	for {
		if err := r.poll.wait(ctx); err != nil {
			why := err.Error()
			if errors.Is(err, context.DeadlineExceeded) {
				why = "timed out"
			}
			return status.ReloadStatus{}, fmt.Errorf("%s (%s)", why, seen)
		}
		_, st, err := fetchStatus(ctx, r.client.Path)
		switch {
		case ctx.Err() != nil: // cut short: said above
		case err != nil:
			seen = "last answer: " + err.Error()
		case st.Reload.Generation > gen && !st.Reload.InProgress:
			return st.Reload, nil
		case st.Reload.Generation > gen:
			seen = fmt.Sprintf("reload %d in progress", st.Reload.Generation)
		}
	}
}
