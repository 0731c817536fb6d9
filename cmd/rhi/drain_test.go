package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/status"
)

// drainConfig writes a config with the seed's VIPs whose drain file and
// control socket are the test's.
func drainConfig(t *testing.T, socket string) (cfg, drainFile string) {
	t.Helper()
	dir := t.TempDir()
	drainFile = filepath.Join(dir, "state", "drain")
	cfg = filepath.Join(dir, "rhi.yaml")
	text := `control_socket: "` + socket + `"
drain_file: ` + drainFile + `
vips:
  - address: 10.0.0.100
    upstreams: ["/apisix/upstreams/api"]
  - address: 10.0.0.101
    upstreams: ["/apisix/upstreams/auth"]
  - address: fd00::1
    upstreams: ["/apisix/upstreams/api"]
`
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, drainFile
}

func TestDrainRecords(t *testing.T) {
	cfg, file := drainConfig(t, "")
	steps := []struct {
		args []string
		code int
		file string // the drain file's lines after the header, "" if unchanged
		err  string
	}{
		{[]string{"drain", "--no-wait", "10.0.0.101"}, exitOK, "10.0.0.101/32", ""},
		{[]string{"drain", "--no-wait", "fd00::1/128"}, exitOK, "10.0.0.101/32 fd00::1/128", ""},
		{[]string{"undrain", "--no-wait", "10.0.0.101/32"}, exitOK, "fd00::1/128", ""},
		{[]string{"drain", "--no-wait", "--all"}, exitOK, "all fd00::1/128", ""},
		// Undraining one VIP out of "all" keeps the others drained.
		{[]string{"undrain", "--no-wait", "10.0.0.100"}, exitOK, "10.0.0.101/32 fd00::1/128", ""},
		{[]string{"undrain", "--no-wait", "--all"}, exitOK, "", ""},
		{[]string{"drain", "--no-wait", "10.9.9.9"}, exitBadInput, "", `"10.9.9.9" is not a VIP of`},
		{[]string{"drain", "--no-wait"}, exitBadInput, "", "name VIPs or give --all"},
		{[]string{"drain", "--no-wait", "--all", "10.0.0.100"}, exitBadInput, "", "name VIPs or give --all"},
	}
	for _, s := range steps {
		var out, errb bytes.Buffer
		args := append([]string{s.args[0], "--config", cfg}, s.args[1:]...)
		if code := run(args, &out, &errb); code != s.code {
			t.Fatalf("%v: exit %d, want %d (%s)", s.args, code, s.code, errb.String())
		}
		if !strings.Contains(errb.String(), s.err) {
			t.Errorf("%v: stderr %q lacks %q", s.args, errb.String(), s.err)
		}
		if s.code != exitOK {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")[1:]
		if got := strings.Join(lines, " "); got != s.file {
			t.Errorf("%v: drain file holds %q, want %q", s.args, got, s.file)
		}
	}
}

// fakeDaemon serves /status on a control socket from a function of the
// request count, and returns the socket's path.
func fakeDaemon(t *testing.T, status func(n int) status.Status) string {
	t.Helper()
	var n atomic.Int32
	return serveControl(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(status(int(n.Add(1))))
	}))
}

func TestDrainWaitsForDaemonAndBird(t *testing.T) {
	// The daemon reads the drain file on the second status. The third
	// shows a check that began before it did: fresh, agreeing, but held to
	// "present", so no confirmation of the drain. BIRD confirms on the
	// fourth.
	var asked atomic.Int32
	addr := fakeDaemon(t, func(n int) status.Status {
		asked.Store(int32(n))
		v := status.VIPStatus{Address: "10.0.0.101/32", OnInterface: true, Desired: true}
		if n >= 2 {
			v.Drained, v.OnInterface, v.Desired = true, false, false
		}
		switch {
		case n == 3:
			v.Bird = &status.VIPConfirm{Expected: router.Present, Agrees: true, CheckedAt: time.Now()}
		case n >= 4:
			v.Bird = &status.VIPConfirm{Expected: router.Absent, Agrees: true, CheckedAt: time.Now()}
		}
		return status.Status{Ready: true, Bird: status.BirdStatus{Enabled: true}, VIPs: []status.VIPStatus{v}}
	})
	cfg, _ := drainConfig(t, addr)
	clock := useCueClock(t, 0) // the next status is due at once; no deadline passes
	var out, errb bytes.Buffer
	if code := run([]string{"drain", "--config", cfg, "--timeout", "20s", "10.0.0.101"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "10.0.0.101/32        drained    withdrawn  BIRD agrees") {
		t.Errorf("output:\n%s", out.String())
	}
	if n := asked.Load(); n != 4 {
		t.Errorf("confirmed after %d status requests, want 4 (the third holds a check made before the drain)", n)
	}
	if n := clock.Waits(); n != 2 {
		t.Errorf("%d waits between the status requests, want 2 (the first request asks /healthz)", n)
	}
}

// TestDrainVIPUnknownToDaemon: a VIP of the file that the running daemon
// does not have (the file changed, no reload yet) is never applied; say so.
func TestDrainVIPUnknownToDaemon(t *testing.T) {
	addr := fakeDaemon(t, func(int) status.Status {
		return status.Status{Ready: true, VIPs: []status.VIPStatus{{Address: "10.0.0.100/32", Drained: true}}}
	})
	cfg, _ := drainConfig(t, addr)
	// --timeout's deadline passes after the first answer.
	clock := useCueClock(t, 1)
	var out, errb bytes.Buffer
	if code := run([]string{"drain", "--config", cfg, "--timeout", "3s", "10.0.0.100", "10.0.0.101"}, &out, &errb); code != exitFailure {
		t.Fatalf("exit %d, want %d: %s", code, exitFailure, errb.String())
	}
	if want := "10.0.0.101/32: not a VIP of the running daemon"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr %q does not say %q", errb.String(), want)
	}
	checkTimeouts(t, clock, 3*time.Second)
}

// checkTimeouts fails the test unless --timeout asked clock for exactly
// want.
func checkTimeouts(t *testing.T, clock *cueClock, want ...time.Duration) {
	t.Helper()
	if got := clock.Timeouts(); !slices.Equal(got, want) {
		t.Errorf("deadlines %v, want %v (--timeout)", got, want)
	}
}

func TestDrainNotConfirmed(t *testing.T) {
	addr := fakeDaemon(t, func(int) status.Status {
		return status.Status{Ready: true, Bird: status.BirdStatus{Enabled: true, Error: "dial unix: no such file"},
			VIPs: []status.VIPStatus{{Address: "10.0.0.101/32", Drained: true}}}
	})
	cfg, _ := drainConfig(t, addr)
	clock := useCueClock(t, 1) // as above
	var out, errb bytes.Buffer
	if code := run([]string{"drain", "--config", cfg, "--timeout", "3s", "10.0.0.101"}, &out, &errb); code != exitFailure {
		t.Fatalf("exit %d, want %d: %s", code, exitFailure, errb.String())
	}
	if !strings.Contains(errb.String(), "BIRD unreachable") {
		t.Errorf("stderr: %s", errb.String())
	}
	checkTimeouts(t, clock, 3*time.Second)
}

// TestDrainDaemonDown: without a daemon to apply it, a drain fails at once
// and records nothing, unless --no-wait.
func TestDrainDaemonDown(t *testing.T) {
	cfg, file := drainConfig(t, deadSocket(t))
	var out, errb bytes.Buffer
	if code := run([]string{"drain", "--config", cfg, "--timeout", "30s", "10.0.0.100"}, &out, &errb); code != exitBadInput {
		t.Fatalf("exit %d, want %d", code, exitBadInput)
	}
	if want := "daemon not reachable on "; !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "nothing recorded") {
		t.Errorf("stderr %q lacks %q and \"nothing recorded\"", errb.String(), want)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the drain file exists (%v): it was recorded", err)
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"drain", "--config", cfg, "--no-wait", "10.0.0.100"}, &out, &errb); code != exitOK {
		t.Fatalf("--no-wait: exit %d: %s", code, errb.String())
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "10.0.0.100/32") {
		t.Error("--no-wait: the drain was not recorded")
	}
}

// TestDrainDaemonGoesAway: a daemon that answered once and then stops
// answering leaves the drain recorded but not confirmed.
func TestDrainDaemonGoesAway(t *testing.T) {
	socket := fakeDaemon(t, func(n int) status.Status {
		if n == 1 {
			return status.Status{Ready: true}
		}
		panic(http.ErrAbortHandler) // the connection is cut
	})
	cfg, file := drainConfig(t, socket)
	// The deadline passes at the second wait: two questions failed.
	clock := useCueClock(t, 2)
	var out, errb bytes.Buffer
	if code := run([]string{"drain", "--config", cfg, "--timeout", "300ms", "10.0.0.100"}, &out, &errb); code != exitFailure {
		t.Fatalf("exit %d, want %d: %s", code, exitFailure, errb.String())
	}
	if !strings.Contains(errb.String(), "NOT confirmed as applied") {
		t.Errorf("stderr: %s", errb.String())
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "10.0.0.100/32") {
		t.Error("the drain was not recorded")
	}
	checkTimeouts(t, clock, 300*time.Millisecond)
}
