package logfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// openGuarded fails the test if opening blocks (a FIFO opened for writing
// waits for a reader for ever); it times nothing.
func openGuarded(t *testing.T, path string) (*File, error) {
	t.Helper()
	var f *File
	var err error
	done := make(chan struct{})
	go func() { f, err = Open(path); close(done) }()
	select {
	case <-done:
		return f, err
	case <-time.After(20 * time.Second):
		t.Fatalf("Open(%q) blocked", path)
		return nil, nil
	}
}

// TestOpenRefusesLinksAndFIFOs: a link planted at a log
// path is not followed and its target is untouched; a FIFO is refused at
// once, with or without a reader.
func TestOpenRefusesLinksAndFIFOs(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary")
	if err := os.WriteFile(canary, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "main.log")
	if err := os.Symlink(canary, link); err != nil {
		t.Fatal(err)
	}
	if f, err := openGuarded(t, link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("log path a link: %v, %v; want refused", f, err)
	}
	if b, _ := os.ReadFile(canary); string(b) != "precious\n" {
		t.Errorf("the link's target was written: %q", b)
	}

	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o640); err != nil {
		t.Fatal(err)
	}
	if f, err := openGuarded(t, fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("log path a FIFO without a reader: %v, %v; want refused", f, err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if f, err := openGuarded(t, fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("log path a FIFO with a reader: %v, %v; want refused", f, err)
	}
}

// TestOpenAppends: an existing log is appended to, never truncated, also
// when a line is written through another descriptor meanwhile (O_APPEND).
func TestOpenAppends(t *testing.T) {
	p := filepath.Join(t.TempDir(), "main.log")
	if err := os.WriteFile(p, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("one\n"))
	other.Write([]byte("two\n"))
	f.Write([]byte("three\n"))
	other.Close()
	f.Close()
	if got := read(t, p); got != "old\none\ntwo\nthree\n" {
		t.Errorf("log holds %q", got)
	}
}

// TestReopenKeepsTheOldFileIfALinkIsPlanted: a link put where the rotated
// log was is refused, and the lines go on to the file already open.
func TestReopenKeepsTheOldFileIfALinkIsPlanted(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "main.log")
	l, err := New(Options{MainPath: p, ErrorPath: p, Stderr: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	canary := filepath.Join(dir, "canary")
	if err := os.WriteFile(canary, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(canary, p); err != nil {
		t.Fatal(err)
	}
	if err := l.Reopen(); err == nil {
		t.Error("Reopen through a link succeeded")
	}
	l.Logger.Info("after")
	if !strings.Contains(read(t, p+".1"), "after") || read(t, canary) != "" {
		t.Errorf("line went to %q / canary %q", read(t, p+".1"), read(t, canary))
	}
}
