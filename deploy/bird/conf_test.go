package birdconf

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestExamplesParse runs BIRD's own parser over the example host files, which
// include the shipped files, so a syntax error in either fails here.
func TestExamplesParse(t *testing.T) {
	bird, err := exec.LookPath("bird")
	if err != nil {
		t.Skip("bird is not installed")
	}
	for _, name := range []string{"adc.conf", "peer.conf"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bird, "-p", "-c", filepath.Join("examples", name)).CombinedOutput()
			if err != nil {
				t.Fatalf("bird -p -c examples/%s: %v\n%s", name, err, out)
			}
		})
	}
}
