package main

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

// files is a fake filesystem for tuneMemoryLimit: path to contents.
type files map[string]string

func (f files) read(p string, max int64) ([]byte, error) {
	s, ok := f[p]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	if int64(len(s)) > max {
		return nil, fmt.Errorf("%s: over %d bytes", p, max)
	}
	return []byte(s), nil
}

// isDir says a path is a directory if a file of f is under it.
func (f files) isDir(p string) error {
	for k := range f {
		if strings.HasPrefix(k, p+"/") {
			return nil
		}
	}
	return &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
}

func TestTuneMemoryLimit(t *testing.T) {
	const unit = "/sys/fs/cgroup/system.slice/rhi.service"
	for _, tc := range []struct {
		name    string
		env     string
		files   files
		set     int64 // the limit set, 0 for none
		want    string
		wantErr string
	}{
		{name: "v2 MemoryMax=512M", files: files{
			"/proc/self/cgroup":                      "0::/system.slice/rhi.service\n",
			unit + "/memory.max":                     "536870912\n",
			"/sys/fs/cgroup/system.slice/memory.max": "max\n",
		}, set: 384 << 20, want: "384MiB (75% of 512MiB, memory.max of " + unit + ")"},
		{name: "v2 tighter parent", files: files{
			"/proc/self/cgroup":                      "0::/system.slice/rhi.service\n",
			unit + "/memory.max":                     "536870912\n",
			"/sys/fs/cgroup/system.slice/memory.max": "268435456\n",
		}, set: 192 << 20, want: "192MiB (75% of 256MiB, memory.max of /sys/fs/cgroup/system.slice)"},
		{name: "v2 no limit", files: files{
			"/proc/self/cgroup":  "0::/system.slice/rhi.service\n",
			unit + "/memory.max": "max\n",
		}, want: "none (no cgroup memory limit)"},
		{name: "v2 root cgroup", files: files{
			"/proc/self/cgroup":           "0::/\n",
			"/sys/fs/cgroup/cgroup.procs": "1\n",
		}, want: "none (no cgroup memory limit)"},
		{name: "v2 not mounted", files: files{
			"/proc/self/cgroup": "0::/system.slice/rhi.service\n",
		}, want: "unknown", wantErr: "the process's memory cgroup: stat " + unit},
		{name: "v1 memory hierarchy", files: files{
			"/proc/self/cgroup": "9:name=systemd:/\n4:memory:/lab/rhi\n0::/\n",
			"/sys/fs/cgroup/memory/lab/rhi/memory.limit_in_bytes": "536870912\n",
			"/sys/fs/cgroup/memory/lab/memory.limit_in_bytes":     "9223372036854771712\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes":         "9223372036854771712\n",
		}, set: 384 << 20, want: "384MiB (75% of 512MiB, memory.limit_in_bytes of /sys/fs/cgroup/memory/lab/rhi)"},
		{name: "v1 unlimited", files: files{
			"/proc/self/cgroup":                           "4:memory:/\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, want: "none (no cgroup memory limit)"},
		{name: "environment wins", env: "200MiB", files: files{}, want: "200MiB (environment)"},
		{name: "garbage limit", files: files{
			"/proc/self/cgroup":  "0::/system.slice/rhi.service\n",
			unit + "/memory.max": "lots\n",
		}, want: "unknown", wantErr: unit + `/memory.max: "lots" is neither a number of bytes nor "max"`},
		{name: "oversized limit file", files: files{
			"/proc/self/cgroup":  "0::/system.slice/rhi.service\n",
			unit + "/memory.max": strings.Repeat("9", 5000),
		}, want: "unknown", wantErr: "over 4096 bytes"},
		{name: "bad cgroup line", files: files{
			"/proc/self/cgroup": "0::/\nnonsense\n",
		}, want: "unknown", wantErr: `/proc/self/cgroup line 2: "nonsense"`},
		{name: "escaping path", files: files{
			"/proc/self/cgroup": "0::/../../etc\n",
		}, want: "unknown", wantErr: `/proc/self/cgroup line 1: "0::/../../etc"`},
		{name: "no proc", files: files{}, want: "unknown", wantErr: "/proc/self/cgroup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set int64
			got, err := tuneMemoryLimit(memoryLimitEnv{
				getenv: func(k string) string {
					if k != "GOMEMLIMIT" {
						t.Errorf("getenv(%q), want GOMEMLIMIT", k)
					}
					return tc.env
				},
				read:  tc.files.read,
				isDir: tc.files.isDir,
				set:   func(n int64) int64 { set = n; return 0 },
			})
			if got != tc.want || set != tc.set {
				t.Errorf("got %q, set %d; want %q, set %d", got, set, tc.want, tc.set)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
