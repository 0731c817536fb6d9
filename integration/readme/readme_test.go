//go:build integration

package readme

import (
	"os"
	"strings"
	"testing"
)

func TestBlock(t *testing.T) {
	doc := []byte("# x\n### 4. BIRD\n```\nbare\n```\n```sh\nbird -p\n```\n### 5. conf\ntext\n```yaml\na: 1\n```\n### 6. next\n```sh\nrun\n```\n")
	for _, tt := range []struct{ step, lang, want string }{
		{"4.", "", "bare\n"},
		{"4.", "sh", "bird -p\n"},
		{"5.", "yaml", "a: 1\n"},
		{"6.", "sh", "run\n"},
	} {
		got, err := Block(doc, tt.step, tt.lang)
		if err != nil || got != tt.want {
			t.Errorf("Block(%q, %q) = %q, %v; want %q", tt.step, tt.lang, got, err, tt.want)
		}
	}
	for _, tt := range []struct{ step, lang string }{{"5.", "sh"}, {"7.", "sh"}, {"4.", "yaml"}} {
		if got, err := Block(doc, tt.step, tt.lang); err == nil {
			t.Errorf("Block(%q, %q) = %q, want an error", tt.step, tt.lang, got)
		}
	}
}

// TestReadmeSteps: the blocks the walk reads are in the README.
func TestReadmeSteps(t *testing.T) {
	b, err := os.ReadFile(Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ step, lang, has string }{
		{"1.", "sh", "apt install ./rhi_"},
		{"4.", "", `include "/usr/share/rhi/bird/adc.conf";`},
		{"5.", "yaml", "vips:"},
		{"6.", "sh", "--dry-run"},
		{"7.", "sh", "systemctl start rhi"},
		{"8.", "sh", "rhi verify"},
	} {
		got, err := Block(b, s.step, s.lang)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if !strings.Contains(got, s.has) {
			t.Errorf("README step %s ```%s block lacks %q:\n%s", s.step, s.lang, s.has, got)
		}
	}
}
