package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckConfigWarnsOfAPublicStatusListen: valid, so exit 0, but said on
// stderr, even with --quiet (the unit runs it so before every start).
func TestCheckConfigWarnsOfAPublicStatusListen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rhi.yaml")
	if err := os.WriteFile(path, []byte("status_listen: 0.0.0.0:9711\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--quiet"}, nil} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"check-config", "--config", path}, args...), &out, &errb); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		want := path + `: warning: status_listen: listens on every address (got "0.0.0.0:9711")`
		if !strings.Contains(errb.String(), want) {
			t.Errorf("%v: stderr %q lacks %q", args, errb.String(), want)
		}
	}
}

// TestStatusWithoutControlSocket: the CLI says why it cannot ask.
func TestStatusWithoutControlSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rhi.yaml")
	if err := os.WriteFile(path, []byte("control_socket: \"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"status", "--config", path}, &out, &errb); code != exitBadInput || !strings.Contains(errb.String(), "control_socket is empty") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"drain", "--config", path, "--all"}, &out, &errb); code != exitBadInput || !strings.Contains(errb.String(), "control_socket is empty") {
		t.Errorf("drain: exit %d, stderr %q", code, errb.String())
	}
}
