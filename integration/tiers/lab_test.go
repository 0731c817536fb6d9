//go:build integration

package tiers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
	"github.com/rhi-daemon/rhi/integration/lab"
)

// The lab's VIPs lie within the guard's range; the prepend is the shipped
// example's.
const (
	guard4  = "10.255.0.0/16{32,32}"
	guard6  = "fd00:255::/32{128,128}"
	prepend = 3
)

var (
	vip4 = netip.MustParsePrefix("10.255.0.10/32")
	vip6 = netip.MustParsePrefix("fd00:255::10/128")
)

// tierLab builds a lab of n ADCs whose BIRD runs tiers.conf instead of
// adc.conf, each with ifb links rhi1 and rhi2 beside rhi0, and returns once
// every session is Established.
func tierLab(t *testing.T, n int, opts lab.Options) *lab.Lab {
	t.Helper()
	opts.Prefix, opts.DCs = "rhitiers-", n
	opts.Tiers = &birdconf.Defines{DegradedPrepend: prepend, Guard4: guard4, Guard6: guard6}
	return lab.ForTest(t, opts)
}

// ip runs ip inside d's namespace.
func ip(t *testing.T, ctx context.Context, d *lab.DC, args ...string) {
	t.Helper()
	if _, err := d.Run(ctx, "ip", args...); err != nil {
		t.Fatal(err)
	}
}

// dial opens a read-only control connection to r's BIRD, closed with the test.
func dial(t *testing.T, r *lab.Router) *bird.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := bird.Dial(ctx, r.BirdSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// raw sends one command to a BIRD socket and returns the exact bytes of the
// reply, for transcripts.
func raw(ctx context.Context, socket, command string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	_ = c.SetDeadline(deadline)
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil { // the greeting
		return "", err
	}
	if _, err := fmt.Fprintf(c, "%s\n", command); err != nil {
		return "", err
	}
	var b strings.Builder
	for b.Len() < 1<<20 {
		line, err := r.ReadString('\n')
		if err != nil {
			return b.String(), err
		}
		b.WriteString(line)
		if len(line) >= 5 && line[4] == ' ' && line[0] >= '0' && line[0] <= '9' {
			return b.String(), nil
		}
	}
	return b.String(), fmt.Errorf("reply over 1 MiB")
}

// capture writes the raw reply to command into $RHI_TIERS_CAPTURE/name, when
// that variable names a directory: how bird/testdata's tiers transcripts
// were made.
func capture(t *testing.T, r *lab.Router, name, command string) {
	t.Helper()
	dir := os.Getenv("RHI_TIERS_CAPTURE")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	out, err := raw(ctx, r.BirdSocket, command)
	if err != nil {
		t.Fatalf("capture %q: %v", command, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("captured %s: %s", name, command)
}

// waitFor waits, bounded by ctx, until cond holds; cond's errors are not
// final (the state it looks at may be in flux).
func waitFor(ctx context.Context, cond func(context.Context) (bool, error)) error {
	return lab.Eventually(ctx, 0, 0, func(ctx context.Context) error {
		ok, err := cond(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("not yet")
		}
		return nil
	})
}
