package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hostileConfig writes a config whose drain file is at drain.
func hostileConfig(t *testing.T, dir, drain string) string {
	t.Helper()
	cfg := filepath.Join(dir, "rhi.yaml")
	text := "status_listen: \"\"\ndrain_file: " + drain + "\nvips:\n  - address: 10.0.0.100\n    upstreams: [\"/apisix/upstreams/api\"]\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runGuarded runs the CLI, failing the test if it blocks.
func runGuarded(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	var code int
	done := make(chan struct{})
	go func() { code = run(args, &out, &errb); close(done) }()
	within(t, "rhi "+strings.Join(args, " "), done)
	return code, errb.String()
}

// TestDrainCommandRefusesFIFOAndLink: `rhi drain` with a FIFO or a planted
// symbolic link at drain_file fails at once with the reason
// (rather than wait for a writer for ever), and never writes through the
// link.
func TestDrainCommandRefusesFIFOAndLink(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := runGuarded(t, "drain", "--no-wait", "--config", hostileConfig(t, dir, fifo), "10.0.0.100")
	if code != exitFailure || !strings.Contains(stderr, "FIFO") {
		t.Errorf("FIFO at drain_file: exit %d, stderr %q; want %d and the FIFO named", code, stderr, exitFailure)
	}

	canary := filepath.Join(dir, "canary")
	if err := os.WriteFile(canary, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "drain")
	if err := os.Symlink(canary, link); err != nil {
		t.Fatal(err)
	}
	code, stderr = runGuarded(t, "drain", "--no-wait", "--config", hostileConfig(t, dir, link), "10.0.0.100")
	if code != exitFailure || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("link at drain_file: exit %d, stderr %q; want %d and the link named", code, stderr, exitFailure)
	}
	b, err := os.ReadFile(canary)
	fi, _ := os.Stat(canary)
	if err != nil || string(b) != "precious\n" || fi.Mode().Perm() != 0o600 {
		t.Errorf("the link's target changed: %q, %v, %v", b, fi.Mode(), err)
	}
}

// TestCheckConfigFIFO: a FIFO config is a clear error, not a hang.
func TestCheckConfigFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "rhi.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := runGuarded(t, "check-config", "--config", fifo)
	if code != exitBadInput || !strings.Contains(stderr, "not a regular file (a FIFO)") {
		t.Errorf("FIFO config: exit %d, stderr %q", code, stderr)
	}
}
