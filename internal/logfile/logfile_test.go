package logfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLevelsSplitBetweenFiles(t *testing.T) {
	dir := t.TempDir()
	mainP, errP := filepath.Join(dir, "main.log"), filepath.Join(dir, "error.log")
	var stderr bytes.Buffer
	l, err := New(Options{MainPath: mainP, ErrorPath: errP, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Logger.Debug("debug-line")
	l.Logger.Info("info-line")
	l.Logger.Warn("warn-line")
	l.Logger.Error("error-line")
	m, e := read(t, mainP), read(t, errP)
	for _, s := range []string{"info-line", "warn-line", "error-line"} {
		if !strings.Contains(m, s) {
			t.Errorf("main log lacks %q:\n%s", s, m)
		}
	}
	if strings.Contains(m, "debug-line") {
		t.Errorf("main log has debug without --debug")
	}
	if strings.Contains(e, "info-line") || !strings.Contains(e, "warn-line") || !strings.Contains(e, "error-line") {
		t.Errorf("error log should hold warnings and up only:\n%s", e)
	}
	// stderr (the journal) gets every line whatever the files.
	l.Flush() // written on a goroutine of its own
	for _, s := range []string{"info-line", "warn-line", "error-line"} {
		if n := strings.Count(stderr.String(), s); n != 1 {
			t.Errorf("stderr has %q %d times, want 1:\n%s", s, n, stderr.String())
		}
	}
}

func TestBothEmptyWritesStderrOnce(t *testing.T) {
	var stderr bytes.Buffer
	l, err := New(Options{Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	l.Logger.Warn("warn-line")
	l.Flush()
	if n := strings.Count(stderr.String(), "warn-line"); n != 1 {
		t.Errorf("warn written %d times to stderr, want 1", n)
	}
}

func TestOnlyMainSet(t *testing.T) {
	dir := t.TempDir()
	mainP := filepath.Join(dir, "main.log")
	var stderr bytes.Buffer
	l, err := New(Options{MainPath: mainP, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Logger.Info("info-line")
	l.Logger.Error("error-line")
	l.Flush()
	for _, out := range []string{stderr.String(), read(t, mainP)} {
		if strings.Count(out, "info-line") != 1 || strings.Count(out, "error-line") != 1 {
			t.Errorf("got %q, want each line once", out)
		}
	}
	if n := len(l.files); n != 1 {
		t.Errorf("%d files open, want 1", n)
	}
}

func TestReopenAfterRename(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "main.log")
	l, err := New(Options{MainPath: p, ErrorPath: p, Stderr: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Logger.Info("before")
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	l.Logger.Info("still-old")
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	l.Logger.Info("after")
	if old := read(t, p+".1"); !strings.Contains(old, "before") || !strings.Contains(old, "still-old") || strings.Contains(old, "after") {
		t.Errorf("rotated file:\n%s", old)
	}
	if cur := read(t, p); !strings.Contains(cur, "after") || strings.Contains(cur, "before") {
		t.Errorf("new file:\n%s", cur)
	}
	if n := strings.Count(read(t, p), "after"); n != 1 {
		t.Errorf("same path for both logs wrote the line %d times", n)
	}
}

func TestOpenFailureNamesPath(t *testing.T) {
	_, err := New(Options{MainPath: "/nonexistent-dir/main.log", Stderr: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), `"/nonexistent-dir/main.log"`) {
		t.Fatalf("err = %v, want one naming the path", err)
	}
}
