package config

import (
	"os"
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
	c, err := Parse("README.md step 5", []byte(readmeConfig(t)))
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
