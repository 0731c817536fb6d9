package config

import (
	"strings"
	"testing"
)

// TestFilesCollideWithLocksAndCleanPaths: the locks beside drain_file and
// state_file count as files too, and paths are compared cleaned; main_log
// and error_log may share one file.
func TestFilesCollideWithLocksAndCleanPaths(t *testing.T) {
	base := "apisix_control_url: http://127.0.0.1:9090\ninterface: rhi0\nbird:\n  socket: /run/bird/bird.ctl\n" +
		"vips:\n  - address: 10.0.0.100\n    upstreams: [\"/apisix/upstreams/api\"]\n"
	for _, tc := range []struct{ extra, want string }{
		{"drain_file: /var/lib/rhi/d\nstate_file: /var/lib/rhi/d.lock\n", "state_file: same file as the lock beside drain_file"},
		{"main_log: /var/lib/rhi//owned\n", "main_log: same file as state_file"},
		{"main_log: /var/log/rhi/rhi.log\nerror_log: /var/log/rhi/rhi.log\n", ""},
	} {
		_, err := Parse("rhi.yaml", []byte(tc.extra+base), apisixKeys)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want accepted", tc.extra, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want %q", tc.extra, err, tc.want)
		}
	}
}
