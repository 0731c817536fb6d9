package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// errLockHeld is returned by tryLock when another process holds the lock.
var errLockHeld = errors.New("held by another process")

// openLock opens (creating if missing) the lock file at path for flock.
// flock needs only a descriptor, and a read-only one will do, so whoever
// can open the file can hold the lock: it is created mode 0600 and a lock
// file that others could open is narrowed to 0600. It is opened without
// following a link and without blocking, and refused unless it is a
// regular file owned by root, by this process's user or by the owner of
// its directory (the daemon's user, for /var/lib/rhi). Created by root in
// a directory of another user, it is given to that user, so that both
// root and the daemon's user can take it.
func openLock(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("lock %q: a symbolic link: refused", path)
		}
		return nil, fmt.Errorf("lock %q: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	if err := checkLock(f, path); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %q: %w", path, err)
	}
	return f, nil
}

// checkLock checks the open lock file f as openLock says, and narrows its
// mode or hands it to its directory's owner where openLock says so.
func checkLock(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("cannot tell its owner")
	}
	euid := uint32(os.Geteuid())
	dirOwner := uint32(0)
	if di, err := os.Stat(filepath.Dir(path)); err == nil {
		if ds, ok := di.Sys().(*syscall.Stat_t); ok {
			dirOwner = ds.Uid
		}
	}
	if st.Uid != 0 && st.Uid != euid && st.Uid != dirOwner {
		return fmt.Errorf("owned by uid %d, neither root, this user (uid %d) nor the directory's owner (uid %d): anyone it belongs to could hold it; refused", st.Uid, euid, dirOwner)
	}
	if euid != 0 && st.Uid != euid {
		if fi.Mode().Perm()&0o077 != 0 {
			return fmt.Errorf("mode %v: others could hold it; refused (fix: chmod 0600 %s)", fi.Mode().Perm(), path)
		}
		return nil
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("narrow its mode %v to 0600: %w", fi.Mode().Perm(), err)
		}
	}
	if euid == 0 && st.Uid == 0 && dirOwner != 0 {
		if err := f.Chown(int(dirOwner), -1); err != nil {
			return fmt.Errorf("give it to the directory's owner (uid %d): %w", dirOwner, err)
		}
	}
	return nil
}

// tryLock takes an exclusive flock on f without waiting: errLockHeld when
// another process has it.
func tryLock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return errLockHeld
		}
		return err
	}
}

// lockRun takes the instance lock, state_file + ".lock", for as long as
// `rhi run` lives: one daemon per ownership record, so per interface. A
// second instance would fight the first (each withdrawing what the other
// announces, each rewriting the record), so it is refused at once: err.
// A lock that cannot be taken for any other reason (the directory missing
// or read-only, a planted file: see openLock) does not stop rhi, since a
// daemon that does not start leaves the VIPs on the interface with no
// health check behind them: warned says why, and the run goes on.
func lockRun(stateFile string) (unlock func(), warned error, err error) {
	path := stateFile + ".lock"
	none := func() {}
	if _, serr := os.Stat(filepath.Dir(path)); errors.Is(serr, os.ErrNotExist) {
		return none, fmt.Errorf("instance lock %q: directory missing; a second rhi run on this state_file would not be refused", path), nil
	}
	f, err := openLock(path)
	if err != nil {
		return none, fmt.Errorf("instance %w; a second rhi run on this state_file would not be refused", err), nil
	}
	switch err := tryLock(f); {
	case errors.Is(err, errLockHeld):
		f.Close()
		return nil, nil, fmt.Errorf("another rhi run holds the instance lock %q (one daemon per state_file): refusing to start a second, which would fight it over the interface", path)
	case err != nil:
		f.Close()
		return none, fmt.Errorf("instance lock %q: %w; a second rhi run on this state_file would not be refused", path, err), nil
	}
	return func() { f.Close() }, nil, nil // closing releases the lock
}
