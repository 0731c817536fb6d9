package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockRunRefusesASecondInstance: the instance lock is held for the
// life of `rhi run`; a second one on the same state_file is refused, and
// the lock is free again once the first lets go.
func TestLockRunRefusesASecondInstance(t *testing.T) {
	state := filepath.Join(t.TempDir(), "owned")
	unlock, warned, err := lockRun(state)
	if err != nil || warned != nil {
		t.Fatalf("first: %v, %v", warned, err)
	}
	if _, _, err := lockRun(state); err == nil || !strings.Contains(err.Error(), "another rhi run holds the instance lock") {
		t.Errorf("second: %v, want it refused", err)
	}
	fi, err := os.Stat(state + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("lock mode %v, want 0600", perm)
	}
	unlock()
	unlock2, _, err := lockRun(state)
	if err != nil {
		t.Fatalf("after the first let go: %v", err)
	}
	unlock2()

	_, warned, err = lockRun(filepath.Join(t.TempDir(), "missing", "owned"))
	if err != nil || warned == nil {
		t.Errorf("missing directory: %v, %v; want a warning and no error", warned, err)
	}
	// A link planted at the lock: warned about, never followed, no refusal
	// to run (a daemon that does not start leaves its VIPs unchecked).
	dir := t.TempDir()
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "owned.lock")); err != nil {
		t.Fatal(err)
	}
	if _, warned, err = lockRun(filepath.Join(dir, "owned")); err != nil || warned == nil || !strings.Contains(warned.Error(), "symbolic link") {
		t.Errorf("planted link: %v, %v; want a warning naming the link and no error", warned, err)
	}
}

// TestOpenLockNarrowsAndRefuses: a lock file left mode 0644 (by an older
// rhi) is narrowed to 0600; a link or a lock of another user is refused.
func TestOpenLockNarrowsAndRefuses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "drain.lock")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := openLock(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want narrowed to 0600", fi.Mode().Perm())
	}
	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := openLock(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("link: %v, want refused", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file of another owner")
	}
	other := filepath.Join(dir, "other.lock")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := openLock(other); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("lock of uid 65534: %v, want refused", err)
	}
}
