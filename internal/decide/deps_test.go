package decide

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPureDependencies: the pure core builds without the HTTP client. decide
// and health must not pull in net/http or crypto/tls (the shared
// vocabulary lives in internal/health, not in internal/apisix), and health,
// the words every package shares, not even YAML.
func TestPureDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	tests := []struct {
		pkg       string
		forbidden []string
	}{
		{"github.com/rhi-daemon/rhi/internal/decide", []string{"net/http", "crypto/tls", "github.com/rhi-daemon/rhi/internal/apisix"}},
		{"github.com/rhi-daemon/rhi/internal/probespec", []string{"net/http", "crypto/tls", "github.com/rhi-daemon/rhi/internal/probe"}},
		{"github.com/rhi-daemon/rhi/internal/health", []string{"net/http", "crypto/tls", "gopkg.in/yaml.v3", "github.com/rhi-daemon/rhi/internal/apisix"}},
	}
	for _, tt := range tests {
		t.Run(tt.pkg[strings.LastIndexByte(tt.pkg, '/')+1:], func(t *testing.T) {
			out, err := exec.Command(goBin, "list", "-deps", tt.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tt.pkg, err)
			}
			deps := map[string]bool{}
			for _, d := range strings.Fields(string(out)) {
				deps[d] = true
			}
			if !deps[tt.pkg] {
				t.Fatalf("go list -deps %s does not list the package itself:\n%s", tt.pkg, out)
			}
			for _, f := range tt.forbidden {
				if deps[f] {
					t.Errorf("%s depends on %s", tt.pkg, f)
				}
			}
		})
	}
}
