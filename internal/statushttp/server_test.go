package statushttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// guard bounds every wait of these tests: a wait that reaches it is a
// failure, never the measure of one.
const guard = 5 * time.Second

var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "rhi") })

// serveOnce serves h with o on a fresh loopback listener until the test
// ends; it returns the address and waits for Serve to return at cleanup.
func serveOnce(t *testing.T, o Options) (string, *logWatch) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	listen := func() (net.Listener, error) {
		err := errors.New("listened once already")
		once.Do(func() { err = nil })
		if err != nil {
			return nil, err
		}
		return ln, nil
	}
	log, hook := newLogWatch()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Serve(ctx, "status_listen", listen, hello, o, log); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(guard):
			t.Error("Serve did not return after its context was cancelled")
		}
	})
	return ln.Addr().String(), hook
}

// exchange sends one keep-alive GET on c and reads the answer.
func exchange(c net.Conn, r *bufio.Reader) (string, error) {
	c.SetDeadline(time.Now().Add(guard))
	if _, err := fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: rhi\r\n\r\n"); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// closedByServer waits for the server to close c: a read ends in EOF or a
// reset rather than at the guard's deadline.
func closedByServer(c net.Conn, r *bufio.Reader) error {
	c.SetReadDeadline(time.Now().Add(guard))
	_, err := r.ReadByte()
	var ne net.Error
	switch {
	case err == nil:
		return errors.New("the server sent data")
	case errors.As(err, &ne) && ne.Timeout():
		return errors.New("still open")
	}
	return nil
}

type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, guard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return client{c, bufio.NewReader(c)}
}

func TestLimitListenerRefusesBeyondMax(t *testing.T) {
	rel := newReleases()
	addr, hook := serveOnce(t, Options{MaxConns: 2, ReadHeaderTimeout: time.Minute, IdleTimeout: time.Minute, released: rel.hook})
	// Two kept-alive connections, each answered once: both slots are held.
	held := []client{dial(t, addr), dial(t, addr)}
	for i, h := range held {
		if body, err := exchange(h.c, h.r); err != nil || body != "rhi" {
			t.Fatalf("connection %d: %q, %v", i, body, err)
		}
	}
	third := dial(t, addr)
	if body, err := exchange(third.c, third.r); err == nil {
		t.Fatalf("a third connection was served (%q) with MaxConns 2", body)
	}
	// The warning follows the close the client has just seen.
	hook.wait(t, "a warning about the refused connection", func(entries []*logrus.Entry) bool {
		for _, e := range entries {
			if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "too many connections") && e.Data["max_conns"] == 2 {
				return true
			}
		}
		return false
	})
	// Closing one frees its slot (once the server has read the EOF) for
	// the next client.
	held[0].c.Close()
	rel.wait(t, "closed connection", held[0].c, guard)
	next := dial(t, addr)
	if body, err := exchange(next.c, next.r); err != nil || body != "rhi" {
		t.Fatalf("the freed slot did not serve the next client: %q, %v", body, err)
	}
	// The other held connection is still served.
	if body, err := exchange(held[1].c, held[1].r); err != nil || body != "rhi" {
		t.Errorf("held connection: %q, %v", body, err)
	}
}

// releases records the remote address of every connection that gave its
// slot back, for a test to wait on one of them.
type releases struct {
	mu   sync.Mutex
	seen map[string]bool
	more chan struct{} // a send for each release; never blocks the server
}

func newReleases() *releases {
	return &releases{seen: map[string]bool{}, more: make(chan struct{}, 1)}
}

func (r *releases) hook(remote net.Addr) {
	r.mu.Lock()
	r.seen[remote.String()] = true
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
}

// wait returns once c's connection has given its slot back, which also
// shows that it held one: a refused connection never does. within bounds
// a failing run.
func (r *releases) wait(t *testing.T, what string, c net.Conn, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for {
		r.mu.Lock()
		done := r.seen[c.LocalAddr().String()]
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-r.more:
		case <-timeout:
			t.Fatalf("the %s never gave a slot back: it was refused, or is still open", what)
		}
	}
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel() // mostly waits for the server's timeouts
	// Short timeouts: each is waited out once or twice. A loaded machine
	// may take longer than the header timeout to send a request: then the
	// test dials again, within guard.
	rel := newReleases()
	addr, _ := serveOnce(t, Options{MaxConns: 1, ReadHeaderTimeout: 10 * time.Millisecond, IdleTimeout: 10 * time.Millisecond, released: rel.hook})
	// A kept-alive connection that asks nothing more is closed...
	var kept client
	deadline := time.Now().Add(guard)
	for {
		kept = dial(t, addr)
		body, err := exchange(kept.c, kept.r)
		if err == nil && body == "rhi" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never answered: %q, %v", body, err)
		}
		kept.c.Close()
	}
	if err := closedByServer(kept.c, kept.r); err != nil {
		t.Fatalf("idle kept-alive connection: %v", err)
	}
	// ...and its slot is free before the next dial, so that the next
	// connection is served, not refused, and only the header timeout can
	// close it: one that never sends its headers is closed, having held
	// the slot, after which the one slot serves again.
	rel.wait(t, "idle kept-alive connection", kept.c, guard)
	silent := dial(t, addr)
	if err := closedByServer(silent.c, silent.r); err != nil {
		t.Fatalf("silent connection: %v", err)
	}
	rel.wait(t, "silent connection", silent.c, guard)
	deadline = time.Now().Add(guard)
	for {
		next := dial(t, addr)
		if body, err := exchange(next.c, next.r); err == nil && body == "rhi" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the only slot never came back")
		}
		next.c.Close()
		rel.wait(t, "connection that did not send its request in time", next.c, guard)
	}
}

func TestServeRetriesWhileTheAddressIsTaken(t *testing.T) {
	squatter, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := squatter.Addr().String()
	log, hook := newLogWatch()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Serve(ctx, "status_listen", TCP(addr), hello, Options{RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond}, log)
		close(done)
	}()
	// Failures are logged: once as an error, then as warnings.
	hook.wait(t, "two failed attempts logged", func(entries []*logrus.Entry) bool {
		var errs, warns int
		for _, e := range entries {
			if e.Data["listener"] == "status_listen" && e.Data[logrus.ErrorKey] != nil {
				switch e.Level {
				case logrus.ErrorLevel:
					errs++
				case logrus.WarnLevel:
					warns++
				}
			}
		}
		if errs > 1 {
			t.Fatalf("the same failure logged %d times as an error", errs)
		}
		return errs == 1 && warns >= 1
	})
	squatter.Close()
	// Serve logs that it serves once it holds the listener: from then on
	// the kernel queues connections for it.
	hook.wait(t, "rhi listening once the squatter left", func(entries []*logrus.Entry) bool {
		for _, e := range entries {
			if e.Level == logrus.InfoLevel && e.Data["addr"] == addr {
				return true
			}
		}
		return false
	})
	resp, err := (&http.Client{Timeout: guard}).Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("rhi not serving once listening: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "rhi" {
		t.Fatalf("rhi once listening: %q, %v", b, err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("Serve did not return after its context was cancelled")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the address is still held after Serve returned: %v", err)
	}
	ln.Close()
}

// logWatch is a logrus hook that keeps every entry and wakes its waiters
// on each one, so a test waits for a log line instead of polling for it.
type logWatch struct {
	mu      sync.Mutex
	entries []*logrus.Entry
	added   chan struct{} // closed and replaced by each entry
}

// newLogWatch is a logger that writes nowhere and its watch.
func newLogWatch() (*logrus.Logger, *logWatch) {
	log := logrus.New()
	log.Out = io.Discard
	log.Level = logrus.DebugLevel
	w := &logWatch{added: make(chan struct{})}
	log.AddHook(w)
	return log, w
}

func (w *logWatch) Levels() []logrus.Level { return logrus.AllLevels }

func (w *logWatch) Fire(e *logrus.Entry) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entries = append(w.entries, &logrus.Entry{Level: e.Level, Message: e.Message, Data: e.Data, Time: e.Time})
	close(w.added)
	w.added = make(chan struct{})
	return nil
}

// wait returns when ok holds for the entries logged so far, checking again
// at each new entry; it fails the test if that takes longer than guard.
func (w *logWatch) wait(t *testing.T, what string, ok func([]*logrus.Entry) bool) {
	t.Helper()
	timeout := time.NewTimer(guard)
	defer timeout.Stop()
	for {
		w.mu.Lock()
		entries, added := slices.Clone(w.entries), w.added
		w.mu.Unlock()
		if ok(entries) {
			return
		}
		select {
		case <-added:
		case <-timeout.C:
			t.Fatalf("not within %s: %s (%d entries logged)", guard, what, len(entries))
		}
	}
}
