package verify

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/router"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

func TestRender(t *testing.T) {
	reports := map[string]string{ // golden name → check case
		"consistent":      "S1 announced, consistent",
		"mismatch":        "withdrawn but BIRD still announces (missed netlink removal)",
		"protocol-down":   "S3 peer down: sessions not asked, no VIP carried",
		"could-not-check": "BIRD stalls: each exchange has its own deadline",
		"direct-down":     "direct protocol down: said once for the report, and per VIP",
	}
	cases := map[string]checkCase{}
	for _, tc := range checkCases() {
		cases[tc.name] = tc
	}
	for name, caseName := range reports {
		t.Run(name, func(t *testing.T) {
			tc, ok := cases[caseName]
			if !ok {
				t.Fatalf("no check case %q", caseName)
			}
			rep, _ := runCase(t, tc)
			if rep.ExitCode() != tc.wantExit {
				t.Fatalf("exit %d, want %d", rep.ExitCode(), tc.wantExit)
			}

			var table bytes.Buffer
			if err := rep.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".table.golden", table.Bytes())

			// Indented, as `rhi verify --json` nests it under "check".
			var js bytes.Buffer
			enc := json.NewEncoder(&js)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".json.golden", js.Bytes())
			var back struct {
				ExitCode int `json:"exit_code"`
			}
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.ExitCode != tc.wantExit {
				t.Errorf("JSON exit_code = %d (%v), want %d", back.ExitCode, err, tc.wantExit)
			}
		})
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestRenderWriteError(t *testing.T) {
	r := router.Report{VIPs: []router.VIPReport{{Prefix: vip4, Expected: router.Present, Agrees: true}}}
	if err := r.WriteTable(failWriter{}); err == nil {
		t.Error("WriteTable: no error from a failing writer")
	}
}
