package config

import (
	"strings"
	"testing"
)

func TestWarningsStatusListen(t *testing.T) {
	tests := []struct {
		listen string
		want   string // substring of the one warning; "" = no warning
	}{
		{"", ""},
		{"127.0.0.1:9711", ""},
		{"127.0.0.53:9711", ""},
		{"[::1]:9711", ""},
		{"[::ffff:127.0.0.1]:9711", ""},
		{"localhost:9711", ""},
		{"0.0.0.0:9711", "every address"},
		{"[::]:9711", "every address"},
		{":9711", "every address"},
		{"192.0.2.10:9711", "not a loopback address"},
		{"[2001:db8::1]:9711", "not a loopback address"},
		{"metrics.example:9711", "is a name"},
	}
	for _, tt := range tests {
		t.Run(tt.listen, func(t *testing.T) {
			c := Default()
			c.StatusListen = tt.listen
			got := Warnings(&c)
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("Warnings = %q, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], tt.want) || !strings.Contains(got[0], `"`+tt.listen+`"`) || !strings.HasPrefix(got[0], "status_listen: ") {
				t.Fatalf("Warnings = %q, want one naming status_listen and %q, containing %q", got, tt.listen, tt.want)
			}
		})
	}
}

func TestControlSocketKey(t *testing.T) {
	for _, tt := range []struct{ in, problem string }{
		{`control_socket: ""`, ""},
		{`control_socket: /run/rhi/other.sock`, ""},
		{`control_socket: rhi.sock`, `f.yaml:1: control_socket: not an absolute path (got "rhi.sock"`},
		{`control_socket: /` + strings.Repeat("a", 107), "longer than 107 bytes"},
	} {
		c, err := Parse("f.yaml", []byte(tt.in), apisixKeys)
		switch {
		case tt.problem == "" && err != nil:
			t.Errorf("%s: %v", tt.in, err)
		case tt.problem == "" && c.ControlSocket != strings.Trim(strings.TrimPrefix(tt.in, "control_socket: "), `"`):
			t.Errorf("%s: ControlSocket = %q", tt.in, c.ControlSocket)
		case tt.problem != "" && (err == nil || !strings.Contains(err.Error(), tt.problem)):
			t.Errorf("%s: error %v, want %q", tt.in, err, tt.problem)
		}
	}
}

// TestWarningsInterfaceLo: interface: lo is warned about, more so under
// unmanaged_addresses: withdraw.
func TestWarningsInterfaceLo(t *testing.T) {
	c := Config{Interface: "lo", Unmanaged: "report"}
	if w := Warnings(&c); len(w) != 1 || !strings.Contains(w[0], "interface: lo") || strings.Contains(w[0], "withdraw deletes") {
		t.Errorf("report: %q", w)
	}
	c.Unmanaged = "withdraw"
	if w := Warnings(&c); len(w) != 1 || !strings.Contains(w[0], "withdraw deletes") {
		t.Errorf("withdraw: %q", w)
	}
	c.Interface = "rhi0"
	if w := Warnings(&c); len(w) != 0 {
		t.Errorf("rhi0: %q", w)
	}
}
