package lab

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/bird/birdtest"
)

// fakeBird serves, for each command, the captured reply in testdata named by
// replies (command → file).
func fakeBird(t *testing.T, replies map[string]string) *birdtest.Server {
	t.Helper()
	raw := map[string]string{}
	for cmd, file := range replies {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		raw[cmd] = string(data)
	}
	return birdtest.NewServer(t, raw)
}

func TestRouterRoutes(t *testing.T) {
	srv := fakeBird(t, map[string]string{
		"show route 10.255.0.10/32": "lab-peer-show-route-vip.both.txt",
		"show route 10.255.0.11/32": "lab-peer-show-route-vip.none.txt",
		"show route table master4":  "lab-peer-show-route.both.txt",
	})
	l := &Lab{Name: "rhi-1-00000000", Dir: "/nonexistent"}
	l.opts.DCs = 2
	plan(l)
	l.Peer.BirdSocket = srv.Path

	got, err := l.Peer.Routes(t.Context(), netip.MustParsePrefix("10.255.0.10/32"))
	if err != nil {
		t.Fatal(err)
	}
	var from []string
	for _, r := range got {
		from = append(from, r.From)
	}
	if diff := cmp.Diff([]string{"dc1", "dc2"}, from); diff != "" {
		t.Errorf("Routes() From (-want +got):\n%s", diff)
	}

	got, err = l.Peer.Routes(t.Context(), netip.MustParsePrefix("10.255.0.11/32"))
	if err != nil || len(got) != 0 {
		t.Errorf("Routes() of an unknown prefix = %+v, %v; want none, no error", got, err)
	}

	got, err = l.Peer.TableRoutes(t.Context(), "master4")
	if err != nil || len(got) != 4 {
		t.Errorf("TableRoutes() = %+v, %v; want 4 paths", got, err)
	}
	// Every question went over a connection restricted to reading.
	if cmds := srv.Commands(); len(cmds) != 6 || cmds[0] != "restrict" {
		t.Errorf("commands = %q, want each question after a restrict", cmds)
	}
}

func TestRouterProtocols(t *testing.T) {
	srv := fakeBird(t, map[string]string{"show protocols": "lab-peer-show-protocols.txt"})
	r := &Router{Name: "peer", BirdSocket: srv.Path, sessions: make([]session, 4)}
	if err := r.established(t.Context()); err != nil {
		t.Errorf("established() = %v; want nil", err)
	}
	r.sessions = make([]session, 5)
	if err := r.established(t.Context()); err == nil {
		t.Error("established() with a session missing = nil; want why")
	}
}

func TestRouterRouteCount(t *testing.T) {
	srv := fakeBird(t, map[string]string{
		"show route count table master4": "bird2.0.12-show-route-count.up-vip.txt",
		"show route count table master6": "bird2.0.12-show-route-count.up-vip.txt",
		"show route count table vip4":    "bird2.0.12-show-route-count.up-vip.txt",
	})
	r := &Router{Name: "peer", BirdSocket: srv.Path}
	for table, want := range map[string]int{"master4": 2, "master6": 1} {
		if n, err := r.RouteCount(t.Context(), table); err != nil || n != want {
			t.Errorf("RouteCount(%s) = %d, %v; want %d", table, n, err, want)
		}
	}
	if n, err := r.RouteCount(t.Context(), "vip4"); err == nil {
		t.Errorf("RouteCount(a table the reply does not count) = %d, want an error", n)
	}
}

func TestQueryErrors(t *testing.T) {
	srv := fakeBird(t, nil)
	srv.Stall("show status")
	r := &Router{Name: "peer", BirdSocket: srv.Path}

	_, err := r.Query(t.Context(), "show foo")
	var be *bird.Error
	if !errors.As(err, &be) || be.Code != 9001 {
		t.Errorf("Query(unknown command) error = %v, want BIRD error 9001", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.Query(ctx, "show status"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Query(stalled) error = %v, want the deadline", err)
	}

	if _, err := r.Query(t.Context(), "show status\nshutdown"); err == nil {
		t.Error("Query(two lines) succeeded, want a refusal")
	}
	if _, err := r.Birdc(t.Context(), "show status\nshutdown"); err == nil || !strings.Contains(err.Error(), "one non-empty line") {
		t.Errorf("Birdc(two lines) = %v, want a refusal", err)
	}

	missing := &Router{Name: "gone", BirdSocket: filepath.Join(t.TempDir(), "none.ctl")}
	if _, err := missing.Query(t.Context(), "show status"); err == nil {
		t.Error("Query(no socket) succeeded, want an error")
	}
}
