package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/ctlsock"
	"github.com/rhi-daemon/rhi/internal/status"
)

var reloadT0 = time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)

// gatedReloader is a daemon whose loop applies a config when the test
// says so: each Reload's channel is closed by apply.
type gatedReloader struct {
	mu      sync.Mutex
	got     []*config.Config
	pending []chan struct{}
	open    bool // apply at once
}

func (g *gatedReloader) Reload(c *config.Config) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.got = append(g.got, c)
	ch := make(chan struct{})
	if g.open {
		close(ch)
	} else {
		g.pending = append(g.pending, ch)
	}
	return ch
}

func (g *gatedReloader) apply() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, ch := range g.pending {
		close(ch)
	}
	g.pending = nil
}

// reloadSite is a fake running daemon: started with the config at
// started, reloading the file at path on "SIGHUP" (the hup of a reloadCLI)
// through the real reloadAttempt, and serving its status, reloads
// included, on a control socket.
type reloadSite struct {
	path     string // the file the daemon reloads
	started  *config.Config
	d        *gatedReloader
	state    *reloadState
	socket   string
	asked    atomic.Int32        // /status requests
	notes    chan string         // what systemd was told
	hups     []int               // the pids signalled
	onAnswer func(status.Status) // called after each /status answer
}

func newReloadSite(t *testing.T, file string) *reloadSite {
	t.Helper()
	started, err := config.Load("../../internal/config/testdata/seed.yaml", apisix.UpstreamKey)
	if err != nil {
		t.Fatal(err)
	}
	s := &reloadSite{path: file, started: started, d: &gatedReloader{open: true},
		state: &reloadState{now: func() time.Time { return reloadT0 }}, notes: make(chan string, 16)}
	src := withReload{statusFunc(func() status.Status { return status.Status{Ready: true} }), s.state}
	s.socket = serveControl(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.asked.Add(1)
		st := src.Status()
		json.NewEncoder(w).Encode(st)
		if s.onAnswer != nil {
			s.onAnswer(st)
		}
	}))
	return s
}

// cli is `rhi reload` against the site, asking at every poll at once
// (ticks is closed), with hup as the site's signal.
func (s *reloadSite) cli(hup func(pid int) error) reloadCLI {
	ticks := make(chan time.Time)
	close(ticks)
	return reloadCLI{client: ctlsock.Client{Path: s.socket}, hup: hup, poll: tickPacer{c: ticks, end: func() {}}}
}

// reload is the daemon's side of a SIGHUP, on a goroutine of its own as
// serveSignals runs it.
func (s *reloadSite) reload(pid int) error {
	s.hups = append(s.hups, pid)
	log, _ := logtest.NewNullLogger()
	go reloadAttempt(context.Background(), s.path, s.started, s.d, s.state, func(n string) { s.notes <- n }, log)
	return nil
}

func runReloadCLI(t *testing.T, c reloadCLI) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = c.run(ctx, &out, &errb)
	return code, out.String(), errb.String()
}

// writeConfig writes the seed config with its interface line replaced by
// iface, and extra at the end.
func writeConfig(t *testing.T, iface, extra string) string {
	t.Helper()
	seed, err := os.ReadFile("../../internal/config/testdata/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(seed), "interface: rhi0\n", "interface: "+iface+"\n", 1) + extra
	path := filepath.Join(t.TempDir(), "rhi.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReloadCmdApplied(t *testing.T) {
	s := newReloadSite(t, writeConfig(t, "rhi0", ""))
	code, out, errs := runReloadCLI(t, s.cli(s.reload))
	if code != 0 || out != "reload 1 applied\n" || errs != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and \"reload 1 applied\"", code, out, errs)
	}
	if len(s.hups) != 1 || s.hups[0] != os.Getpid() {
		t.Errorf("signalled %v, want once the pid listening on the socket (%d)", s.hups, os.Getpid())
	}
	if len(s.d.got) != 1 {
		t.Errorf("the daemon got %d configs, want 1", len(s.d.got))
	}
	if got := <-s.notes; !strings.HasPrefix(got, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Errorf("systemd told %q first, want RELOADING=1 and MONOTONIC_USEC", got)
	}
	if got := <-s.notes; got != "READY=1\nSTATUS=reload 1 applied" {
		t.Errorf("systemd told %q, want READY=1 and the outcome", got)
	}
}

func TestReloadCmdRejectedPrintsEveryReason(t *testing.T) {
	s := newReloadSite(t, writeConfig(t, "eth9", "\nstate_file: /elsewhere/owned\n"))
	code, out, errs := runReloadCLI(t, s.cli(s.reload))
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	for _, want := range []string{"reload 1 rejected", "interface", "state_file", "only on restart"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q lacks %q", errs, want)
		}
	}
	if len(s.d.got) != 0 {
		t.Error("the daemon got the rejected config")
	}
	<-s.notes
	if got := <-s.notes; !strings.HasPrefix(got, "READY=1\nSTATUS=reload 1 rejected: ") || strings.Count(got, "\n") != 1 {
		t.Errorf("systemd told %q, want READY=1 and the rejection on one STATUS line", got)
	}
}

func TestReloadCmdRejectsAFileThatDoesNotLoad(t *testing.T) {
	// Two problems: both reach the operator.
	s := newReloadSite(t, writeConfig(t, "rhi0", "\napisix_poll_mode: sometimes\nvips_typo: 1\n"))
	code, _, errs := runReloadCLI(t, s.cli(s.reload))
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code != 1 || len(lines) != 3 || !strings.Contains(lines[1]+lines[2], "apisix_poll_mode") || !strings.Contains(lines[1]+lines[2], "vips_typo") {
		t.Fatalf("exit %d, stderr %q; want 1 and both problems, one a line", code, errs)
	}
}

// TestReloadCmdWaitsForTheLoop: an accepted config is not "applied" until
// the loop has taken it; `rhi reload` waits while the attempt is in
// progress.
func TestReloadCmdWaitsForTheLoop(t *testing.T) {
	s := newReloadSite(t, writeConfig(t, "rhi0", ""))
	s.d.open = false
	var inProgress atomic.Bool
	s.onAnswer = func(st status.Status) {
		if st.Reload.InProgress {
			inProgress.Store(true)
			s.d.apply() // the loop takes it after an answer that said "in progress"
		}
	}
	code, out, _ := runReloadCLI(t, s.cli(s.reload))
	if code != 0 || out != "reload 1 applied\n" || !inProgress.Load() {
		t.Fatalf("exit %d, stdout %q, seen in progress %v", code, out, inProgress.Load())
	}
}

// TestReloadCmdGenerationMustPass: a reload that ended before `rhi reload`
// asked is not its outcome.
func TestReloadCmdGenerationMustPass(t *testing.T) {
	s := newReloadSite(t, writeConfig(t, "eth9", ""))
	gen := s.state.begin()
	s.state.finish(gen, nil) // generation 1 applied, before
	code, _, errs := runReloadCLI(t, s.cli(s.reload))
	if code != 1 || !strings.Contains(errs, "reload 2 rejected") {
		t.Fatalf("exit %d, stderr %q; want reload 2's rejection", code, errs)
	}
}

func TestReloadCmdTimeout(t *testing.T) {
	s := newReloadSite(t, writeConfig(t, "rhi0", ""))
	ctx, cancel := context.WithCancel(context.Background())
	c := s.cli(func(int) error { cancel(); return nil }) // the daemon never answers in time
	var out, errb bytes.Buffer
	if code := c.run(ctx, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no outcome") ||
		!strings.Contains(errb.String(), "generation still 0") {
		t.Fatalf("exit %d, stderr %q; want 2 and no outcome", code, errb.String())
	}
}

func TestReloadCmdUnreachable(t *testing.T) {
	dead := reloadCLI{client: ctlsock.Client{Path: deadSocket(t)}, hup: func(int) error {
		t.Error("signalled a daemon that is not there")
		return nil
	}}
	code, _, errs := runReloadCLI(t, dead)
	if code != 2 || !strings.Contains(errs, "not reachable") {
		t.Fatalf("exit %d, stderr %q; want 2, not reachable", code, errs)
	}
	s := newReloadSite(t, writeConfig(t, "rhi0", ""))
	code, _, errs = runReloadCLI(t, s.cli(func(int) error { return syscall.ESRCH }))
	if code != 2 || !strings.Contains(errs, "signalling the daemon") {
		t.Fatalf("exit %d, stderr %q; want 2 when the signal fails", code, errs)
	}
}

func TestReloadSocket(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	def := config.Default().ControlSocket
	for _, c := range []struct{ name, text, want string }{
		{"good.yaml", "control_socket: /run/x/a.sock\n", "/run/x/a.sock"},
		{"bad-key.yaml", "control_socket: /run/x/b.sock\ninterface: [\n", def},
		{"bad-value.yaml", "control_socket: /run/x/c.sock\napisix_poll_mode: sometimes\n", "/run/x/c.sock"},
		{"no-key.yaml", "apisix_poll_mode: sometimes\n", def},
		{"off.yaml", "control_socket: \"\"\n", ""},
	} {
		if got := reloadSocket(write(c.name, c.text)); got != c.want {
			t.Errorf("%s: socket %q, want %q", c.name, got, c.want)
		}
	}
	if got := reloadSocket(filepath.Join(dir, "missing.yaml")); got != def {
		t.Errorf("missing file: socket %q, want the default %q", got, def)
	}
}

func TestReloadState(t *testing.T) {
	r := &reloadState{now: func() time.Time { return reloadT0 }}
	if st := r.get(); st != (status.ReloadStatus{}) {
		t.Fatalf("before any reload: %+v", st)
	}
	g1 := r.begin()
	if st := r.get(); g1 != 1 || !st.InProgress || st.Generation != 1 || st.AppliedGeneration != 0 || !st.LastAt.Equal(reloadT0) {
		t.Fatalf("in progress: %d, %+v", g1, st)
	}
	r.finish(g1, nil)
	if st := r.get(); st.InProgress || st.AppliedGeneration != 1 || st.LastError != "" {
		t.Fatalf("applied: %+v", st)
	}
	g2 := r.begin()
	r.finish(g2, errors.New("interface changed"))
	if st := r.get(); st.Generation != 2 || st.AppliedGeneration != 1 || st.LastError != "interface changed" || st.InProgress {
		t.Fatalf("rejected: %+v", st)
	}
	r.finish(1, nil) // a stale outcome changes nothing
	if st := r.get(); st.AppliedGeneration != 1 || st.LastError == "" {
		t.Fatalf("after a stale finish: %+v", st)
	}
	g3 := r.begin()
	if st := r.get(); g3 != 3 || st.LastError != "" || !st.InProgress {
		t.Fatalf("a new attempt keeps the old error: %+v", st)
	}
}

// TestReloadAttemptStopsWithTheDaemon: an accepted config the loop never
// takes (it stopped) is not recorded as applied, and systemd is not told
// READY=1.
func TestReloadAttemptStopsWithTheDaemon(t *testing.T) {
	d := &gatedReloader{}
	state := &reloadState{now: time.Now}
	started, err := config.Load("../../internal/config/testdata/seed.yaml", apisix.UpstreamKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var notes []string
	log, _ := logtest.NewNullLogger()
	if reloadAttempt(ctx, "../../internal/config/testdata/seed.yaml", started, d, state, func(n string) { notes = append(notes, n) }, log) {
		t.Error("reported applied")
	}
	if st := state.get(); st.AppliedGeneration != 0 || !st.InProgress {
		t.Errorf("state %+v", st)
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "RELOADING=1") {
		t.Errorf("systemd told %q", notes)
	}
}

// TestReloadCommandSignalsTheDaemon runs `rhi reload --config F` as the
// unit's ExecReload does: a real SIGHUP, to this process, which listens on
// the socket F names.
func TestReloadCommandSignalsTheDaemon(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP)
	defer signal.Stop(sigs)
	s := newReloadSite(t, "")
	s.path = writeConfig(t, "rhi0", "\ncontrol_socket: "+s.socket+"\n")
	s.started.ControlSocket = s.socket
	// The command asks /status again once systemd has been told the
	// outcome, and from then on at once.
	ticks := make(chan time.Time)
	useTickClock(t, ticks)
	go func() {
		<-sigs
		s.reload(os.Getpid())
		<-s.notes // RELOADING=1
		<-s.notes // READY=1: the outcome
		close(ticks)
	}()
	var out, errb bytes.Buffer
	if code := run([]string{"reload", "--config", s.path, "--timeout", "30s"}, &out, &errb); code != 0 || out.String() != "reload 1 applied\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

func TestReloadedNoticeIsOneStatusLine(t *testing.T) {
	err := errors.New("/etc/rhi/rhi.yaml:3: interface: bad\n/etc/rhi/rhi.yaml:9: vips: bad")
	if got, want := reloadedNotice(8, err), "READY=1\nSTATUS=reload 8 rejected: /etc/rhi/rhi.yaml:3: interface: bad /etc/rhi/rhi.yaml:9: vips: bad"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := reloadingNotice(12345); got != "RELOADING=1\nMONOTONIC_USEC=12345" {
		t.Errorf("got %q", got)
	}
}

// TestReloadAttemptTellsSystemd: through NOTIFY_SOCKET, RELOADING=1 with a
// monotonic time of now, then READY=1 and the outcome.
func TestReloadAttemptTellsSystemd(t *testing.T) {
	c := fakeSystemd(t)
	started, err := config.Load("../../internal/config/testdata/seed.yaml", apisix.UpstreamKey)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := logtest.NewNullLogger()
	state := &reloadState{now: time.Now}
	before := monotonicUsec()
	if !reloadAttempt(context.Background(), "../../internal/config/testdata/seed.yaml", started, &gatedReloader{open: true}, state, sdNotify, log) {
		t.Fatal("not applied")
	}
	after := monotonicUsec()
	var usec uint64
	if n, err := fmt.Sscanf(recv(t, c), "RELOADING=1\nMONOTONIC_USEC=%d", &usec); n != 1 || err != nil || usec < before || usec > after {
		t.Errorf("RELOADING: MONOTONIC_USEC %d (%v), want within [%d, %d]", usec, err, before, after)
	}
	if got := recv(t, c); got != "READY=1\nSTATUS=reload 1 applied" {
		t.Errorf("got %q", got)
	}
}

// TestStatusTableShowsARejectedReload: `rhi status` says that the file on
// disk is not what runs, and why, on one line.
func TestStatusTableShowsARejectedReload(t *testing.T) {
	s := statusSample()
	var plain bytes.Buffer
	writeStatus(&plain, s, statusNow)
	if strings.Contains(plain.String(), "reload") {
		t.Errorf("a status without a rejected reload mentions one:\n%s", plain.String())
	}
	s.Reload = status.ReloadStatus{Generation: 3, AppliedGeneration: 2, LastAt: statusNow.Add(-time.Minute),
		LastError: "rhi.yaml:3: interface: bad\nrhi.yaml:9: vips: bad"}
	var out bytes.Buffer
	writeStatus(&out, s, statusNow)
	want := "reload     3 REJECTED 1m0s ago, the previous configuration runs: rhi.yaml:3: interface: bad; rhi.yaml:9: vips: bad\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, out.String())
	}
}

func TestReloadCmdRefusesANonPositiveTimeout(t *testing.T) {
	for _, d := range []string{"0s", "-1s"} {
		var out, errb bytes.Buffer
		if code := run([]string{"reload", "--config", "../../internal/config/testdata/seed.yaml", "--timeout", d}, &out, &errb); code != 2 ||
			!strings.Contains(errb.String(), "--timeout must be positive (got "+d+")") {
			t.Errorf("--timeout %s: exit %d, stderr %q", d, code, errb.String())
		}
	}
}
