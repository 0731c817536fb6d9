package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/asuser"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/verify"
)

// birdSocketEnv hands the socket to the child of TestBirdPermissionHint.
const birdSocketEnv = "RHI_TEST_BIRD_SOCKET"

// TestBirdPermissionHint connects, as the daemon and as `rhi verify` do, to
// a socket the user may not connect to (as BIRD's bird:bird 0660 is to a
// user outside group bird) and checks that the error says what to do. Root
// connects anyway, so as root the checks run in a child process as nobody.
func TestBirdPermissionHint(t *testing.T) {
	if sock := os.Getenv(birdSocketEnv); sock != "" {
		checkBirdHints(t, sock)
		return
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "bird.ctl")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		checkBirdHints(t, sock)
		return
	}

	// The child must reach the socket and run a copy of the test binary.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := asuser.Run(t.Context(), dir, "TestBirdPermissionHint", asuser.Nobody, asuser.Nobody, birdSocketEnv+"="+sock); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func checkBirdHints(t *testing.T, sock string) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	in := router.Input{ExchangeTimeout: time.Second}

	rep := birdSocket{verify.Socket{Path: sock}}.Check(ctx, in)
	if rep.Err == nil || !strings.Contains(rep.Err.Error(), "permission denied") || !strings.HasSuffix(rep.Err.Error(), birdHintDaemon) {
		t.Errorf("daemon's confirmer: %v; want permission denied and the hint %q", rep.Err, birdHintDaemon)
	}
	rep = checkBird(ctx, sock, in)
	if rep.Err == nil || !strings.HasSuffix(rep.Err.Error(), birdHintVerify) {
		t.Errorf("rhi verify: %v; want the hint %q", rep.Err, birdHintVerify)
	}
	// Other failures get no hint.
	missing := filepath.Join(filepath.Dir(sock), "missing.ctl")
	rep = birdSocket{verify.Socket{Path: missing}}.Check(ctx, in)
	if rep.Err == nil || strings.Contains(rep.Err.Error(), "BIRD's group") {
		t.Errorf("missing socket: %v; want an error without the group hint", rep.Err)
	}
}
