package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestDrainLockNotLockableByOthers: flock needs only a descriptor,
// and a read-only one will do. lockDrain creates drain_file.lock mode 0644,
// so with drain_file outside the 0750 state directory (say /etc/rhi/drain),
// any local user can open it and hold LOCK_EX forever: every `rhi drain`
// and `rhi undrain` then fails after --timeout ("still held by another rhi
// drain"), and prerm's `rhi drain --all` cannot withdraw the VIPs before
// removal. Seen with `setpriv --reuid=nobody flock -x DIR/drain.lock sleep`.
// The lock file must not be readable (so not lockable) by others.
func TestDrainLockNotLockableByOthers(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDrain(context.Background(), filepath.Join(dir, "drain"))
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	fi, err := os.Stat(filepath.Join(dir, "drain.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&0o007 != 0 {
		t.Errorf("drain.lock is mode %v: any local user can open it and hold the lock", perm)
	}
}
