package daemon

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// countedConn reports its first Close on closed.
type countedConn struct {
	net.Conn
	once   sync.Once
	closed chan<- struct{}
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.closed <- struct{}{} })
	return c.Conn.Close()
}

// TestReloadClosesOldClient: 40 reloads that change how
// the control API is read each build a new client; every old client's
// kept-alive connections must be closed, not left for their 50 s idle
// timeout (fds 79 -> 2,628 and thousands of goroutines in the red-team run).
func TestReloadClosesOldClient(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"name":"/apisix/upstreams/`+path.Base(r.URL.Path)+`","nodes":[{"status":"healthy"}],"type":"http"}`)
	}))
	defer ts.Close()

	closed := make(chan struct{}, 10_000)
	var dialed atomic.Int64 // by every client
	var last *atomic.Int64  // dialed by the newest client
	newClient := func(c *config.Config) HealthSource {
		mine := new(atomic.Int64)
		last = mine
		var d net.Dialer
		tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			dialed.Add(1)
			mine.Add(1)
			return &countedConn{Conn: conn, closed: closed}, nil
		}}
		h, err := apisix.NewClient(c.ControlURL, apisix.Options{Timeout: c.Timeout, HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	cfg := seed(config.Withdraw)
	cfg.ControlURL = ts.URL
	r := newRig(t, cfg, newFakeLink())
	r.d.health = planned(newClient(cfg))
	r.d.env.newHS = newClient
	r.tick(t)
	for i := range 40 {
		next := seed(config.Withdraw)
		next.ControlURL = ts.URL
		next.Timeout = cfg.Timeout + time.Duration(i+1)*time.Millisecond
		r.d.applyReload(next)
		r.tick(t)
	}
	if r.d.health.Poll(context.Background(), health.Upstreams("/apisix/upstreams/api"))["/apisix/upstreams/api"].Verdict != health.Up {
		t.Fatal("the newest client does not poll")
	}

	// A connection that turns idle just after the swap is closed by the
	// transport's own goroutine: wait for the closes, not for a time. The
	// timer only keeps a failing run from hanging.
	old := dialed.Load() - last.Load()
	if old < 40 {
		t.Fatalf("only %d connections dialed by 40 old clients", old)
	}
	timeout := time.After(10 * time.Second)
	for n := int64(0); n < old; n++ {
		select {
		case <-closed:
		case <-timeout:
			t.Fatalf("%d of the old clients' %d connections still open", old-n, old)
		}
	}
}

// closingHealth is a health source that is no Planner and keeps
// connections: it counts the CloseIdleConnections it is asked.
type closingHealth struct {
	*fakeHealth
	closes int
}

func (c *closingHealth) CloseIdleConnections() { c.closes++ }

// TestReloadClosesAnUnplannedSource: a source that is no Planner is polled
// through the loop's wrapper, and a reload that replaces it must still
// close its connections; the one that replaces it keeps its own.
func TestReloadClosesAnUnplannedSource(t *testing.T) {
	cfg := seed(config.Withdraw)
	r := newRig(t, cfg, newFakeLink())
	first := &closingHealth{fakeHealth: r.health}
	r.d.health = planned(first)
	second := &closingHealth{fakeHealth: r.health}
	sources := []*closingHealth{second, second}
	r.d.env.newHS = func(*config.Config) HealthSource {
		h := sources[0]
		sources = sources[1:]
		return h
	}
	r.tick(t)

	next := seed(config.Withdraw)
	next.Timeout = cfg.Timeout + time.Millisecond
	r.d.applyReload(next)
	r.tick(t)
	if first.closes != 1 || second.closes != 0 {
		t.Fatalf("replaced source closed %d times, its successor %d; want 1, 0", first.closes, second.closes)
	}

	// A reload whose new source is the one in use closes nothing.
	again := seed(config.Withdraw)
	again.Timeout = cfg.Timeout + 2*time.Millisecond
	r.d.applyReload(again)
	r.tick(t)
	if second.closes != 0 {
		t.Fatalf("the source in use was closed %d times on a reload that kept it", second.closes)
	}
}
