package site

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat. Linux fixes it
// at 100 for user space whatever the kernel's own tick rate (USER_HZ).
const userHZ = 100

// maxProcFile bounds what is read of one /proc file; stat and status are a
// few KiB.
const maxProcFile = 64 << 10

// Proc is one reading of a process's resources.
type Proc struct {
	At      time.Time
	CPU     time.Duration // user + system time since the process started
	RSS     int64         // resident set, bytes (VmRSS)
	HWM     int64         // peak resident set, bytes (VmHWM)
	Threads int
	FDs     int // open file descriptors
}

// ReadProc reads pid's resources from /proc.
func ReadProc(pid int) (Proc, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	p := Proc{At: time.Now()}
	stat, err := readSmall(filepath.Join(dir, "stat"))
	if err != nil {
		return p, err
	}
	if p.CPU, err = parseStat(stat); err != nil {
		return p, fmt.Errorf("pid %d: %w", pid, err)
	}
	status, err := readSmall(filepath.Join(dir, "status"))
	if err != nil {
		return p, err
	}
	if p.RSS, p.HWM, p.Threads, err = parseStatus(status); err != nil {
		return p, fmt.Errorf("pid %d: %w", pid, err)
	}
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return p, err
	}
	p.FDs = len(fds)
	return p, nil
}

// CPUShare is the share of one core b's process used since a, e.g. 0.01 for
// 1 % of a core.
func CPUShare(a, b Proc) float64 {
	wall := b.At.Sub(a.At)
	if wall <= 0 {
		return 0
	}
	return float64(b.CPU-a.CPU) / float64(wall)
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, maxProcFile)
	n, err := f.Read(buf)
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", path, err)
	}
	return buf[:n], nil
}

// parseStat returns utime + stime from /proc/<pid>/stat. The command name
// (field 2) is in parentheses and may itself hold spaces and ')', so the
// fields are counted from the last ')'.
func parseStat(data []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("stat %q: no command name", truncate(data))
	}
	// After ')': state (field 3) … utime (14), stime (15).
	f := strings.Fields(string(data[end+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("stat %q: %d fields after the command name, want at least 13", truncate(data), len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat: utime/stime %q: %w", s, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// parseStatus returns VmRSS and VmHWM in bytes and Threads from
// /proc/<pid>/status.
func parseStatus(data []byte) (rss, hwm int64, threads int, err error) {
	seen := 0
	for line := range strings.SplitSeq(string(data), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		if len(f) == 0 {
			continue
		}
		switch key {
		case "VmRSS", "VmHWM":
			// The kernel prints these in kB (KiB) always.
			kb, perr := strconv.ParseInt(f[0], 10, 64)
			if perr != nil {
				return 0, 0, 0, fmt.Errorf("status: %s %q: %w", key, val, perr)
			}
			if key == "VmRSS" {
				rss = kb << 10
			} else {
				hwm = kb << 10
			}
			seen++
		case "Threads":
			n, perr := strconv.Atoi(f[0])
			if perr != nil {
				return 0, 0, 0, fmt.Errorf("status: Threads %q: %w", val, perr)
			}
			threads = n
			seen++
		}
	}
	if seen != 3 {
		return 0, 0, 0, fmt.Errorf("status: VmRSS, VmHWM or Threads missing (a zombie has no memory lines)")
	}
	return rss, hwm, threads, nil
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// FindPid returns the pid of the process whose command line holds arg as
// one whole argument: how the lab's fake control API is found by its
// unique control-socket path.
func FindPid(arg string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := readSmall(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone, or a kernel thread with an empty command line
		}
		for a := range bytes.SplitSeq(cmdline, []byte{0}) {
			if string(a) == arg {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process has the argument %q", arg)
}
