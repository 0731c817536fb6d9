package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/drain"
)

// manyVIPs writes a config of n VIPs, 10.1.0.1 to 10.1.0.n, with no
// control socket (the drains run with --no-wait), and returns the config's
// path, the drain file's and the VIPs.
func manyVIPs(t *testing.T, n int) (cfg, file string, vips []string) {
	t.Helper()
	dir := memDir(t)
	file = filepath.Join(dir, "state", "drain")
	var b strings.Builder
	fmt.Fprintf(&b, "control_socket: \"\"\ndrain_file: %s\nvips:\n", file)
	for i := 1; i <= n; i++ {
		v := fmt.Sprintf("10.1.0.%d", i)
		vips = append(vips, v)
		fmt.Fprintf(&b, "  - address: %s\n    upstreams: [\"/apisix/upstreams/u%d\"]\n", v, i)
	}
	cfg = filepath.Join(dir, "rhi.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, file, vips
}

// memDir is a temporary directory in memory (tmpfs /dev/shm) if it can be
// made, else t.TempDir(): there the fsyncs of drain.Write cost nothing,
// where they took 5 ms each on this machine's disk, and every drain takes
// the lock in turn.
func memDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "rhi-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// drained lists what the drain file holds, and fails the test if it does
// not hold exactly want.
func drainedExactly(t *testing.T, file string, want []string) {
	t.Helper()
	set, err := drain.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, v := range want {
		p, _ := drain.ParsePrefix(v)
		if !set.VIPs[p] {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 || len(set.VIPs) != len(want) || set.All {
		t.Errorf("the drain file holds %d VIPs (all=%v); %d of %d drains lost: %v", len(set.VIPs), set.All, len(missing), len(want), missing)
	}
}

// TestConcurrentDrainsInProcess: 30 drains of different VIPs at once, each
// reading and replacing the file, all end up in it.
func TestConcurrentDrainsInProcess(t *testing.T) {
	cfg, file, vips := manyVIPs(t, 30)
	var wg sync.WaitGroup
	errs := make([]string, len(vips))
	for i, v := range vips {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errb bytes.Buffer
			if code := run([]string{"drain", "--config", cfg, "--no-wait", v}, &out, &errb); code != exitOK {
				errs[i] = fmt.Sprintf("%s: exit %d: %s", v, code, errb.String())
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	drainedExactly(t, file, vips)

	// And 30 undrains at once leave nothing.
	for _, v := range vips {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errb bytes.Buffer
			if code := run([]string{"undrain", "--config", cfg, "--no-wait", v}, &out, &errb); code != exitOK {
				t.Errorf("undrain %s: exit %d: %s", v, code, errb.String())
			}
		}()
	}
	wg.Wait()
	drainedExactly(t, file, nil)
}

// TestDrainLockHoldsAcrossProcesses: while this process holds the drain
// lock, an `rhi drain` in another process (this test binary, re-run as the
// command) waits and gives up at its --timeout, writing nothing; once the
// lock is free, the same drain succeeds. The lock belongs to the file, not
// to one process. TestConcurrentDrainsInProcess shows that drains taking
// the lock in turn lose nothing.
func TestDrainLockHoldsAcrossProcesses(t *testing.T) {
	if args := os.Getenv("RHI_TEST_RUN_ARGS"); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	cfg, file, vips := manyVIPs(t, 1)
	if err := os.MkdirAll(filepath.Dir(file), 0o750); err != nil {
		t.Fatal(err)
	}
	drainProcess := func(timeout string) (code int, out string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDrainLockHoldsAcrossProcesses$")
		cmd.Env = append(os.Environ(), "RHI_TEST_RUN_ARGS="+strings.Join([]string{"drain", "--config", cfg, "--no-wait", "--timeout", timeout, vips[0]}, "\x1f"))
		b, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("rhi drain process: %v", err)
		}
		return cmd.ProcessState.ExitCode(), string(b)
	}
	unlock, err := lockDrain(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	if code, out := drainProcess("50ms"); code != exitFailure || !strings.Contains(out, "still held by another rhi drain") {
		t.Errorf("drain in another process while the lock is held: exit %d, want %d, saying the lock is held: %s", code, exitFailure, out)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the drain file was written while another process held the lock (%v)", err)
	}
	unlock()
	if code, out := drainProcess("1m"); code != exitOK {
		t.Fatalf("drain in another process once the lock is free: exit %d: %s", code, out)
	}
	drainedExactly(t, file, vips)
}

// TestDrainWaitsForTheLock: a drain waits while another holds the lock, and
// gives up when its --timeout ends, recording nothing.
func TestDrainWaitsForTheLock(t *testing.T) {
	cfg, file, vips := manyVIPs(t, 2)
	if err := os.MkdirAll(filepath.Dir(file), 0o750); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockDrain(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	// The deadline passes at the first wait for the lock.
	clock := useCueClock(t, 1)
	var out, errb bytes.Buffer
	if code := run([]string{"drain", "--config", cfg, "--no-wait", "--timeout", "100ms", vips[0]}, &out, &errb); code != exitFailure {
		t.Fatalf("exit %d while the lock is held, want %d", code, exitFailure)
	}
	if !strings.Contains(errb.String(), "still held by another rhi drain") {
		t.Errorf("stderr: %s", errb.String())
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the drain file was written while the lock was held (%v)", err)
	}
	unlock()
	if code := run([]string{"drain", "--config", cfg, "--no-wait", "--timeout", "5s", vips[0]}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d once the lock is free: %s", code, errb.String())
	}
	drainedExactly(t, file, vips[:1])
	checkTimeouts(t, clock, 100*time.Millisecond, 5*time.Second)
	if n := clock.Waits(); n != 1 {
		t.Errorf("%d waits for the lock, want 1 (then the deadline passed; the second drain found it free)", n)
	}
}

// TestDrainLockIsNotFollowed: a link or a FIFO planted at the lock's path is
// refused at once; the link's target is untouched.
func TestDrainLockIsNotFollowed(t *testing.T) {
	cfg, file, vips := manyVIPs(t, 1)
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(string) error{
		"a link to a file":  func(p string) error { return os.Symlink(target, p) },
		"a link to nowhere": func(p string) error { return os.Symlink(filepath.Join(dir, "nowhere"), p) },
		"a FIFO":            func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"a directory":       func(p string) error { return os.Mkdir(p, 0o700) },
	}
	for name, f := range plant {
		t.Run(name, func(t *testing.T) {
			lock := file + ".lock"
			os.Remove(lock)
			if err := f(lock); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(lock)
			var out, errb bytes.Buffer
			if code := run([]string{"drain", "--config", cfg, "--no-wait", "--timeout", "5s", vips[0]}, &out, &errb); code != exitFailure {
				t.Fatalf("exit %d, want %d", code, exitFailure)
			}
			if !strings.Contains(errb.String(), "drain lock") {
				t.Errorf("stderr: %s", errb.String())
			}
			if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !os.IsNotExist(err) {
				t.Error("a file was created through the dangling link")
			}
		})
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
		t.Errorf("the link's target: %q, %v", b, err)
	}
}
