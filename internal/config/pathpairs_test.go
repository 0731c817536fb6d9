package config

import (
	"strings"
	"testing"
)

// TestFilesMustNotCollide: rhi replaces state_file by renaming a new
// file over it (and drain_file too, from rhi drain), keeps main_log and
// error_log open for appending, and binds control_socket. Only state_file =
// drain_file is refused today; any other pair sharing one path silently
// breaks both: with state_file = main_log, the first record write renames
// the record over the log (the daemon goes on logging into a deleted file),
// and after a log reopen the record is a log, unreadable at the next start,
// so a VIP dropped from the config stays announced. Each pair must be
// refused by name.
func TestFilesMustNotCollide(t *testing.T) {
	keys := []string{"main_log", "error_log", "drain_file", "state_file", "control_socket"}
	for i, a := range keys {
		for _, b := range keys[i+1:] {
			if a == "main_log" && b == "error_log" {
				continue // may share a file: one log
			}
			t.Run(a+"="+b, func(t *testing.T) {
				yaml := "apisix_control_url: http://127.0.0.1:9090\ninterface: rhi0\n" +
					"bird:\n  socket: /run/bird/bird.ctl\n" +
					a + ": /var/lib/rhi/shared\n" + b + ": /var/lib/rhi/shared\n" +
					"vips:\n  - address: 10.0.0.100\n    upstreams: [\"/apisix/upstreams/api\"]\n"
				_, err := Parse("rhi.yaml", []byte(yaml), apisixKeys)
				if err == nil || !strings.Contains(err.Error(), "same file") {
					t.Errorf("%s and %s both /var/lib/rhi/shared: got %v, want an error saying they are the same file", a, b, err)
				}
			})
		}
	}
}
