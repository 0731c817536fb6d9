package decide

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
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
	// One go list answers for all of them: each run of the go command
	// costs a tenth of a second.
	args := []string{"list", "-json=ImportPath,Deps"}
	for _, tt := range tests {
		args = append(args, tt.pkg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goBin, args...).Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	listed := map[string]map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: decoding: %v\n%s", err, out)
		}
		deps := map[string]bool{}
		for _, d := range p.Deps {
			deps[d] = true
		}
		listed[p.ImportPath] = deps
	}
	for _, tt := range tests {
		t.Run(tt.pkg[strings.LastIndexByte(tt.pkg, '/')+1:], func(t *testing.T) {
			deps, ok := listed[tt.pkg]
			if !ok || len(deps) == 0 {
				t.Fatalf("go list does not list %s or its dependencies:\n%s", tt.pkg, out)
			}
			for _, f := range tt.forbidden {
				if deps[f] {
					t.Errorf("%s depends on %s", tt.pkg, f)
				}
			}
		})
	}
}
