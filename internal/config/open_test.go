package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/safefile"
)

// loadGuarded fails the test if Load blocks (a FIFO opened for reading
// waits for a writer for ever); it times nothing.
func loadGuarded(t *testing.T, path string) (*Config, error) {
	t.Helper()
	type res struct {
		c   *Config
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := Load(path, apisixKeys); ch <- res{c, err} }()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("Load(%q) blocked", path)
		return nil, nil
	}
}

// TestLoadRefusesSpecialFiles: a FIFO, a device or a directory at the
// config path is a clear error at once: a reload that
// blocked on it would stop the signal handling with it.
func TestLoadRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "rhi.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{fifo: "a FIFO", "/dev/null": "a device", dir: "a directory"} {
		c, err := loadGuarded(t, path)
		if !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), kind) || !strings.Contains(err.Error(), path) {
			t.Errorf("Load(%s): %v, %v; want an error naming the path and %s", path, c, err, kind)
		}
	}
}

// TestLoadFollowsALink: a config linked from elsewhere (root's choice in
// root's /etc/rhi) still loads; a link to a FIFO does not.
func TestLoadFollowsALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.yaml")
	if err := os.WriteFile(target, []byte("interface: rhi7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "rhi.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	c, err := loadGuarded(t, link)
	if err != nil || c.Interface != "rhi7" {
		t.Fatalf("Load through a link: %+v, %v", c, err)
	}
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(target, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadGuarded(t, link); !errors.Is(err, safefile.ErrNotRegular) {
		t.Errorf("Load through a link to a FIFO: %v, want not a regular file", err)
	}
}
