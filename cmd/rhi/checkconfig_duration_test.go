package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckConfigWarnsOfBareSeconds: `apisix_poll_interval: 500` is valid
// (8m20s) and exits 0, but check-config says so on stderr, naming the
// file, key, value and line, even with --quiet.
func TestCheckConfigWarnsOfBareSeconds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rhi.yaml")
	if err := os.WriteFile(path, []byte("# polls\napisix_poll_interval: 500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--quiet"}, nil} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"check-config", "--config", path}, args...), &out, &errb); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		for _, want := range []string{
			path + `: warning: apisix_poll_interval (line 2): the whole number "500" is read as seconds, 8m20s`,
			path + `: warning: apisix_poll_interval (line 2): 8m20s is over 1m0s`,
		} {
			if !strings.Contains(errb.String(), want) {
				t.Errorf("%v: stderr %q lacks %q", args, errb.String(), want)
			}
		}
	}
}
