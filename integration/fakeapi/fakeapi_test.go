package fakeapi

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/health"
)

// TestControlSteersPolls runs the fake API as the lab does and checks that
// what the control socket sets is what rhi's client reads.
func TestControlSteersPolls(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	srv := apisixtest.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A poll must succeed, however loaded the machine: the timeout only
	// bounds a failing run.
	cl, err := apisix.NewClient("http://"+ln.Addr().String(), apisix.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- Serve(ctx, ln, sock, srv) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	c := NewClient(sock)
	api := apisix.Ref{Type: "upstreams", ID: "api"}
	waitUp(t, c)

	steps := []struct {
		name string
		do   func() error
		want health.Verdict
	}{
		{"healthy", func() error { return c.SetNodes(api, 2, "healthy") }, health.Up},
		{"unhealthy", func() error { return c.SetStatus(api, "unhealthy") }, health.Down},
		{"v2 healthy", func() error { return c.SetFormat(api, "v2", 1, "healthy") }, health.Up},
		{"no checker", func() error { return c.NoChecker(api) }, health.NoChecker},
		{"gone", func() error { return c.Remove(api) }, health.NotFound},
		{"500", func() error { c.SetNodes(api, 1, "healthy"); return c.Fault(apisix.Ref{}, "500") }, health.Failed},
		{"cleared", func() error { return c.Fault(apisix.Ref{}, "none") }, health.Up},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		const key = "/apisix/upstreams/api"
		if got := cl.Poll(context.Background(), health.Upstreams(key))[key].Verdict; got != s.want {
			t.Errorf("%s: verdict %v, want %v", s.name, got, s.want)
		}
	}
	if err := c.Fault(apisix.Ref{}, "bogus"); err == nil {
		t.Error("unknown fault accepted")
	}
	// Requests counts the health requests served: one per Poll above, and
	// one more now.
	before, err := c.Requests()
	if err != nil {
		t.Fatal(err)
	}
	cl.Poll(context.Background(), health.Upstreams("/apisix/upstreams/api"))
	if after, err := c.Requests(); err != nil || after != before+1 {
		t.Errorf("requests went from %d to %d (%v), want +1", before, after, err)
	}
	if _, err := NewClient(filepath.Join(t.TempDir(), "none.sock")).Requests(); err == nil {
		t.Error("missing socket: no error")
	}
}

// waitUp waits until Serve, on its own goroutine, answers on the control
// socket. The bound is a time, not a count of tries: under -race on a
// loaded machine a hundred tries can pass before that goroutine runs.
func waitUp(t *testing.T, c *Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // a failure bound, not a wait
	for {
		err := c.do("GET", "/requests")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("control socket never came up: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
