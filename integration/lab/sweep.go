package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// netnsDir is where `ip netns` keeps named namespaces.
const netnsDir = "/run/netns"

// Sweep deletes the namespaces and lab directories (in os.TempDir()) whose
// names start with prefix and whose owning process is gone, after killing any
// process still inside those namespaces. Labs of running processes are left
// alone, so it is safe while other labs run. It returns what it removed.
func Sweep(ctx context.Context, prefix string) ([]string, error) {
	if !validPrefix(prefix) {
		return nil, fmt.Errorf("sweep prefix %q: use letters, digits, '.', '_' and '-'", prefix)
	}
	ctx, cancel := context.WithTimeout(ctx, closeTime)
	defer cancel()
	var removed []string
	var errs []error

	entries, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	for _, e := range entries {
		if !stale(e.Name(), prefix) {
			continue
		}
		if err := deleteNamespace(ctx, e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}

	dirs, err := os.ReadDir(os.TempDir())
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("sweep: %w", err))...)
	}
	for _, e := range dirs {
		if !e.IsDir() || !stale(e.Name(), prefix) {
			continue
		}
		path := filepath.Join(os.TempDir(), e.Name())
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}

// stale reports whether name is <prefix><pid>-<hex>[-<host>] of a process
// that no longer exists.
func stale(name, prefix string) bool {
	pid, ok := owner(name, prefix)
	return ok && !alive(pid)
}

// owner parses the owning pid out of a lab name.
func owner(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	parts := strings.SplitN(rest, "-", 3)
	if len(parts) < 2 || len(parts[1]) != 8 {
		return 0, false
	}
	if _, err := strconv.ParseUint(parts[1], 16, 32); err != nil {
		return 0, false
	}
	pid, err := parsePid(parts[0])
	return pid, err == nil
}

func parsePid(s string) (int, error) {
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != s {
		return 0, fmt.Errorf("pid %q: not a positive decimal", s)
	}
	return pid, nil
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// syscallKill sends SIGKILL and waits briefly for the process to go, so that
// the namespace is really empty when it is deleted.
func syscallKill(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	for range 50 {
		if !alive(pid) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("pid %d survived SIGKILL for 500 ms", pid)
}

func validPrefix(p string) bool {
	if p == "" {
		return false
	}
	for _, c := range p {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
