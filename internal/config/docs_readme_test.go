package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeConfig returns the rhi.yaml that the README's getting-started path
// shows inline: the yaml block of its step "/etc/rhi/rhi.yaml".
func readmeConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, step, ok := strings.Cut(string(b), "\n### 5. `/etc/rhi/rhi.yaml`\n")
	if !ok {
		t.Fatal("README.md has no step \"### 5. `/etc/rhi/rhi.yaml`\"")
	}
	step, _, _ = strings.Cut(step, "\n### ")
	_, block, ok := strings.Cut(step, "```yaml\n")
	if !ok {
		t.Fatal("README.md step 5 has no ```yaml block")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatal("README.md step 5: the yaml block is not closed")
	}
	return block
}

// TestReadmeConfig: the rhi.yaml a new operator copies from the README is
// valid, draws no warning, and announces a VIP from an upstream, as the
// steps around it say.
func TestReadmeConfig(t *testing.T) {
	c, err := Parse("README.md step 5", []byte(readmeConfig(t)), apisixKeys)
	if err != nil {
		t.Fatalf("the README's rhi.yaml does not parse:\n%v", err)
	}
	if w := Warnings(c); len(w) != 0 {
		t.Errorf("the README's rhi.yaml draws warnings: %q", w)
	}
	if len(c.VIPs) == 0 || len(c.VIPs[0].Upstreams) == 0 {
		t.Errorf("the README's rhi.yaml has no VIP with an upstream")
	}
	if c.StatusListen == "" || len(c.Bird.Protocols) == 0 {
		t.Errorf("the README's rhi.yaml lacks status_listen (step 9) or bird.protocols (step 4): %q %q", c.StatusListen, c.Bird.Protocols)
	}
}

// keyMention matches a backticked mention that starts like a config key:
// a name, then .name, [N] or [] parts ("bird.socket", "vips[0].probe.url"),
// up to a space, colon or equals sign ("apisix_poll_interval: 500").
var keyMention = regexp.MustCompile("`([a-z][a-z_]*(?:\\.[a-z][a-z_]*|\\[[0-9]*\\])*)(?:[ :=][^`]*)?`")

// TestGuideKeysDocumented: every backticked mention in the operator's
// guides whose first name is a top-level config key names a key that
// docs/configuration.md documents, so that a renamed or misspelt key in the
// README (`vips[].vip`) fails here. File names that start like a key
// (`bird.conf`) are not keys, and neither are the fields of rhi status
// that docs/status-json.md documents (`interface.error`).
func TestGuideKeysDocumented(t *testing.T) {
	rows, _ := docKeys(t)
	b, err := os.ReadFile("../../docs/status-json.md")
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 2 {
			status[strings.Trim(strings.TrimSpace(cells[1]), "`")] = true
		}
	}
	if !status["interface.error"] {
		t.Fatalf("docs/status-json.md: no row `interface.error`: its table is not read")
	}
	top := map[string]bool{}
	for k := range rows {
		top[strings.FieldsFunc(k, func(r rune) bool { return r == '.' || r == '[' })[0]] = true
	}
	if !top["vips"] || !top["bird"] || !top["interface"] {
		t.Fatalf("top-level keys read from %s: %v", configDoc, top)
	}
	index := regexp.MustCompile(`\[[0-9]+\]`)
	for _, f := range []string{"../../README.md", "../../docs/operations.md", "../../docs/monitoring.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range keyMention.FindAllStringSubmatch(line, -1) {
				key := index.ReplaceAllString(m[1], "[]")
				name := strings.FieldsFunc(key, func(r rune) bool { return r == '.' || r == '[' })[0]
				if !top[name] || strings.HasSuffix(key, ".conf") || status[key] {
					continue
				}
				n++
				if _, ok := rows[key]; !ok {
					t.Errorf("%s:%d: `%s` is not a key of %s", f, i+1, m[1], configDoc)
				}
			}
		}
		if n == 0 && f == "../../README.md" {
			t.Errorf("%s: no key mention found: the pattern no longer matches", f)
		}
	}
}
