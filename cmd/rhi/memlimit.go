package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/rhi-daemon/rhi/internal/safefile"
)

// memoryLimitPercent is the share of the cgroup's memory limit that `rhi
// run` gives Go as its soft memory limit (debug.SetMemoryLimit) when the
// environment sets no GOMEMLIMIT: 384 MiB under the unit's MemoryMax=512M.
// Near it the collector runs more often instead of letting the heap grow
// into the kernel's limit; the quarter left is for what Go does not count
// and the cgroup does: socket buffers, the page cache of the logs, a
// reload's `rhi check-config`.
const memoryLimitPercent = 75

// noCgroupLimit is the value at and above which a cgroup v1
// memory.limit_in_bytes means "no limit" (the kernel writes the largest
// multiple of the page size below 2^63).
const noCgroupLimit = 1 << 62

// Bounds of the files read: /proc/self/cgroup holds a line per v1
// hierarchy, a memory limit one number.
const (
	maxProcCgroup = 64 << 10
	maxLimitFile  = 4 << 10
)

// memoryLimitEnv is what tuneMemoryLimit reads and sets: the process's
// environment, files (/proc/self/cgroup and the cgroup files, read by
// safefile: no link followed, no blocking, bounded) and the runtime.
type memoryLimitEnv struct {
	getenv func(string) string
	read   func(path string, max int64) ([]byte, error)
	isDir  func(path string) error // nil if path is a directory
	set    func(int64) int64
}

// tuneMemoryLimit sets Go's soft memory limit to memoryLimitPercent of the
// tightest memory limit of the process's cgroup and its ancestors, unless
// GOMEMLIMIT is set (the runtime applied it already). It returns what is
// in force, for the log beside GOGC: "384MiB (75% of 512MiB, memory.max of
// /sys/fs/cgroup/system.slice/rhi.service)", "300MiB (environment)", "none
// (no cgroup memory limit)"; and an error when the limit cannot be read,
// in which case none is set ("unknown").
func tuneMemoryLimit(env memoryLimitEnv) (string, error) {
	if v := env.getenv("GOMEMLIMIT"); v != "" {
		return v + " (environment)", nil
	}
	limit, file, err := cgroupMemoryLimit(env.read, env.isDir)
	if err != nil {
		return "unknown", fmt.Errorf("no Go memory limit set: %w", err)
	}
	if limit == 0 {
		return "none (no cgroup memory limit)", nil
	}
	soft := limit/100*memoryLimitPercent + limit%100*memoryLimitPercent/100 // without overflow
	env.set(soft)
	return fmt.Sprintf("%s (%d%% of %s, %s)", mib(soft), memoryLimitPercent, mib(limit), file), nil
}

// memoryLimit is what cmdRun calls.
func memoryLimit() (string, error) {
	return tuneMemoryLimit(memoryLimitEnv{
		getenv: os.Getenv,
		read: func(p string, max int64) ([]byte, error) {
			b, _, err := safefile.Read(p, max)
			return b, err
		},
		isDir: func(p string) error {
			fi, err := os.Stat(p)
			if err == nil && !fi.IsDir() {
				err = fmt.Errorf("%s: not a directory", p)
			}
			return err
		},
		set: debug.SetMemoryLimit,
	})
}

// cgroupMemoryLimit is the tightest memory limit, in bytes, of the
// process's cgroup and its ancestors (cgroup v2's memory.max, or v1's
// memory.limit_in_bytes), and the file it was read from; 0 when none is
// limited. The cgroup's own directory must be there: a cgroup filesystem
// not mounted where /proc/self/cgroup says (as under `ip netns exec`,
// which mounts a new /sys) is an error, not "no limit".
func cgroupMemoryLimit(read func(string, int64) ([]byte, error), isDir func(string) error) (int64, string, error) {
	data, err := read("/proc/self/cgroup", maxProcCgroup)
	if err != nil {
		return 0, "", err
	}
	dir, file, err := memoryCgroup(data)
	if err != nil {
		return 0, "", err
	}
	if err := isDir(dir); err != nil {
		return 0, "", fmt.Errorf("the process's memory cgroup: %w", err)
	}
	var best int64
	var bestFile string
	for p := dir; ; p = path.Dir(p) {
		f := path.Join(p, file)
		n, err := readLimit(read, f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// the root cgroup has no limit file; nor has a v2 cgroup
			// whose parent does not delegate the memory controller
		case err != nil:
			return 0, "", err
		case n > 0 && (best == 0 || n < best):
			best, bestFile = n, f
		}
		if p == "/sys/fs/cgroup" || p == "/sys/fs/cgroup/memory" || p == "/" || p == "." {
			break
		}
	}
	if best == 0 {
		return 0, "", nil
	}
	return best, file + " of " + path.Dir(bestFile), nil
}

// memoryCgroup finds the process's memory cgroup in /proc/self/cgroup:
// its directory and the name of its limit file. A v1 memory hierarchy
// ("4:memory:/system.slice/rhi.service") wins over the v2 line
// ("0::/system.slice/rhi.service"), as the kernel then enforces v1's.
func memoryCgroup(procCgroup []byte) (dir, file string, err error) {
	var v2 string
	haveV2 := false
	for i, line := range strings.Split(strings.TrimRight(string(procCgroup), "\n"), "\n") {
		id, rest, ok1 := strings.Cut(line, ":")
		ctrls, p, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || !strings.HasPrefix(p, "/") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
			return "", "", fmt.Errorf("/proc/self/cgroup line %d: %q: not hierarchy-ID:controllers:/path", i+1, line)
		}
		for _, c := range strings.Split(ctrls, ",") {
			if c == "memory" {
				return path.Join("/sys/fs/cgroup/memory", p), "memory.limit_in_bytes", nil
			}
		}
		if id == "0" && ctrls == "" {
			v2, haveV2 = p, true
		}
	}
	if !haveV2 {
		return "", "", errors.New("/proc/self/cgroup names no memory cgroup (neither a v1 memory hierarchy nor v2)")
	}
	return path.Join("/sys/fs/cgroup", v2), "memory.max", nil
}

// readLimit reads a cgroup memory limit file: a number of bytes, or "max"
// (v2) or a number at or above noCgroupLimit (v1) for none, which is 0.
func readLimit(read func(string, int64) ([]byte, error), file string) (int64, error) {
	data, err := read(file, maxLimitFile)
	if err != nil {
		return 0, err
	}
	v := string(bytes.TrimSpace(data))
	if v == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is neither a number of bytes nor \"max\"", file, v)
	}
	if n >= noCgroupLimit {
		return 0, nil
	}
	return int64(n), nil
}

// mib is n bytes in MiB, as GOMEMLIMIT would be written.
func mib(n int64) string {
	return strconv.FormatInt(n>>20, 10) + "MiB"
}
