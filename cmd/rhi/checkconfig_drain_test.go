package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDrainFileWarning: check-config says when drain_file cannot be used
// (a bad line, a FIFO), and nothing for a good or missing one.
func TestDrainFileWarning(t *testing.T) {
	dir := t.TempDir()
	good, bad, fifo := filepath.Join(dir, "good"), filepath.Join(dir, "bad"), filepath.Join(dir, "fifo")
	if err := os.WriteFile(good, []byte("10.0.0.100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("10.0.0.1O1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{good: "", filepath.Join(dir, "missing"): "", "": "", bad: "10.0.0.1O1", fifo: "not a regular file"} {
		w := drainFileWarning(path, 20*time.Second) // a hang guard, no timing goal
		if (want == "") != (w == "") || !strings.Contains(w, want) {
			t.Errorf("%q: warning %q, want one holding %q", path, w, want)
		}
		if want != "" && !strings.Contains(w, "treats every VIP as drained") {
			t.Errorf("%q: warning %q does not say what rhi run does", path, w)
		}
	}
}
