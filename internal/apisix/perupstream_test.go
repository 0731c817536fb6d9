package apisix_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/health"
)

// distinct gives resource i a state no other of the n has: i%5 healthy of
// i%5+1+i/5 nodes (so Healthy and Total name i), or no checker, or none.
func distinct(srv *apisixtest.Server, n int) (keys []string, want map[string]got) {
	want = map[string]got{}
	for i := range n {
		ref := apisix.Ref{Type: "upstreams", ID: fmt.Sprint("u", i)}
		key := "/apisix/upstreams/" + ref.ID
		keys = append(keys, key)
		switch {
		case i%17 == 3:
			srv.NoChecker(ref)
			want[key] = got{health.NoChecker, 0, 0}
		case i%17 == 5: // never created: not found
			want[key] = got{health.NotFound, 0, 0}
		default:
			healthy, total := i%5, i%5+1+i/5
			nodes := make([]apisixtest.Node, total)
			for k := range nodes {
				nodes[k] = apisixtest.Node{IP: "10.0.0.1", Port: 80 + k, Status: apisixtest.Unhealthy}
				if k < healthy {
					nodes[k].Status = apisixtest.Healthy
				}
			}
			srv.SetNodes(ref, nodes...)
			v := health.Down
			if healthy > 0 {
				v = health.Up
			}
			want[key] = got{v, healthy, total}
		}
	}
	return keys, want
}

func checkAll(t *testing.T, snap health.Snapshot, want map[string]got) {
	t.Helper()
	for k, w := range want {
		r := snap[k]
		if g := (got{r.Verdict, int(r.Healthy), int(r.Total)}); g != w {
			t.Errorf("%s: got %+v (err %v), want %+v", k, g, r.Err, w)
		}
	}
}

// Every resource gets its own answer, in both body codings, with nginx's
// close after keepalive_requests answers in the middle of a poll (the next
// request goes on another connection, and the server sees each resource
// once).
func TestPerUpstreamOrder(t *testing.T) {
	for _, tt := range []struct {
		name      string
		chunked   bool
		keepalive int
	}{{"length", false, 0}, {"chunked", true, 0}, {"keepalive 7", false, 7}, {"chunked keepalive 1", true, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := apisixtest.New()
			srv.SetChunked(tt.chunked)
			srv.SetKeepaliveRequests(tt.keepalive)
			ts := srv.Start()
			defer srv.Close()
			keys, want := distinct(srv, 120)
			c := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModePerUpstream})
			for range 2 {
				checkAll(t, c.Poll(context.Background(), ups(keys...)), want)
			}
			for _, k := range keys[:20] {
				ref, _ := apisix.ParseRef(k)
				if n := srv.RequestsFor(ref); n != 2 {
					t.Errorf("%v requested %d times in 2 polls, want 2", ref, n)
				}
			}
		})
	}
}

// A resource whose request the server answers by closing the connection is
// sent again (the Transport retries it), then Failed; the others are
// answered.
func TestPerUpstreamRefusedOne(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	keys, want := distinct(srv, 100)
	bad := ups(keys[10])[0]
	srv.SetFault(refOf(bad), apisixtest.Refuse)
	delete(want, bad.Key)
	snap := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModePerUpstream}).Poll(context.Background(), ups(keys...))
	checkAll(t, snap, want)
	if r := snap[bad.Key]; r.Verdict != health.Failed || !errors.Is(r.Err, io.EOF) {
		t.Errorf("refused: %v, err %v; want failed, EOF", r.Verdict, r.Err)
	}
	// The Transport sends a request again whenever the kept connection it
	// went on closed before any answer, and stops at a fresh one: each
	// retry uses up a connection another request left idle, so there are
	// fewer than the poll's other requests.
	if n := srv.RequestsFor(refOf(bad)); n < 2 || n > len(keys) {
		t.Errorf("refused resource requested %d times, want 2 to %d", n, len(keys))
	}
}

// rawServer accepts connections and hands each to serve; it counts them.
type rawServer struct {
	ln    net.Listener
	conns atomic.Int32
	wg    sync.WaitGroup
}

func newRawServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Go(func() {
				defer c.Close()
				serve(c, bufio.NewReader(c))
			})
		}
	})
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

const okBody = `{"name":"/apisix/upstreams/a","type":"http","nodes":[{"ip":"10.0.0.1","port":80,"status":"healthy"}]}`

var okAnswer = fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(okBody), okBody)

// A server that closes every connection without a byte: each request is
// sent twice and Failed, and the client dials a bounded number of times.
func TestPerUpstreamServerClosesSilently(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		_, _ = http.ReadRequest(br) // then close
	})
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = fmt.Sprint("/apisix/upstreams/u", i)
	}
	snap := newClient(t, s.url(), apisix.Options{}).Poll(context.Background(), ups(keys...))
	for _, k := range keys {
		if r := snap[k]; r.Verdict != health.Failed || r.Err == nil || !strings.HasPrefix(r.Err.Error(), "GET /v1/healthcheck/upstreams/u") {
			t.Errorf("%s: %v, err %v", k, r.Verdict, r.Err)
		}
	}
	// Each connection charges the request at its head: at most two
	// connections per request.
	if n := int(s.conns.Load()); n > 2*len(keys) || n < len(keys) {
		t.Errorf("%d connections for %d requests, want %d to %d", n, len(keys), len(keys), 2*len(keys))
	}
}

// Odd answers: a 1xx before the answer is read past; junk and a body cut
// short fail the request they answer; a second answer to one request, and
// an HTTP/1.0 answer, are used and the connection closed.
func TestPerUpstreamOddAnswers(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   health.Verdict
		err    string
	}{
		{"1xx", "HTTP/1.1 100 Continue\r\n\r\n" + okAnswer, health.Up, ""},
		{"junk", "\x00\x01 junk\r\n\r\n", health.Failed, `GET /v1/healthcheck/upstreams/a: net/http: HTTP/1.x transport connection broken: malformed HTTP status code "junk"`},
		{"cut", strings.TrimSuffix(okAnswer, "}"), health.Failed, "GET /v1/healthcheck/upstreams/a: read body: unexpected EOF"},
		{"two answers", okAnswer + okAnswer, health.Up, ""},
		{"HTTP/1.0", strings.Replace(okAnswer, "HTTP/1.1", "HTTP/1.0", 1), health.Up, ""},
		{"close", strings.Replace(okAnswer, "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1), health.Up, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					if _, err := io.WriteString(c, tt.answer); err != nil {
						return
					}
					if tt.name == "cut" {
						return
					}
				}
			})
			c := newClient(t, s.url(), apisix.Options{})
			defer c.CloseIdleConnections() // or the server waits for their idle timeout
			for poll := range 2 {
				r := c.Poll(context.Background(), ups("/apisix/upstreams/a"))["/apisix/upstreams/a"]
				if r.Verdict != tt.want || (tt.err != "" && (r.Err == nil || r.Err.Error() != tt.err)) {
					t.Errorf("poll %d: %v, err %v; want %v, %q", poll, r.Verdict, r.Err, tt.want, tt.err)
				}
			}
			// A 1xx before the answer is read past, and the connection
			// kept; anything else odd drops it. A second answer is the
			// exception: net/http drops the connection when its read loop
			// sees the unsolicited bytes, which it may do only after the
			// next request has taken the idle connection (and then reads
			// them as its answer: TestPerUpstreamStaleAnswerIsNotUsed).
			n, want := s.conns.Load(), int32(2-btoi(tt.name == "1xx"))
			if tt.name == "two answers" && n == 1 {
				want = 1
			}
			if n != want {
				t.Errorf("%d connections for two polls, want %d", n, want)
			}
		})
	}
}

// A stalled answer holds its connection until the poll ends; cancelling
// the poll when the server holds it back ends the poll at once, the stalled
// request and those not sent yet Failed with the context's error, the
// others answered.
func TestPerUpstreamStallCanceled(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	keys, want := distinct(srv, 40)
	stalled := ups(keys[0])[0]
	srv.SetFault(refOf(stalled), apisixtest.Stall)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-srv.Stalled()
		cancel()
	}()
	// An hour: only the cancellation can end this poll in the test's time.
	snap := newClient(t, ts.URL, apisix.Options{MaxInFlight: 1, Timeout: time.Hour}).Poll(ctx, ups(keys...))
	if r := snap[stalled.Key]; r.Verdict != health.Failed || !errors.Is(r.Err, context.Canceled) {
		t.Errorf("stalled: %v, err %v; want failed, canceled", r.Verdict, r.Err)
	}
	for k, w := range want {
		if r := snap[k]; r.Verdict != w.Verdict && (r.Verdict != health.Failed || !errors.Is(r.Err, context.Canceled)) {
			t.Errorf("%s: %v, err %v; want %v or canceled", k, r.Verdict, r.Err, w.Verdict)
		}
	}
}

// A body over the bound fails its request only. The bound is small, so
// the client gives the body up after 64 KiB (TestPollFaults holds the
// default bound).
func TestPerUpstreamOversizeOne(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	keys, want := distinct(srv, 60)
	big := ups(keys[7])[0]
	srv.SetFault(refOf(big), apisixtest.Oversize)
	delete(want, big.Key)
	snap := newClient(t, ts.URL, apisix.Options{MaxInFlight: 1, MaxBodyBytes: 64 << 10}).Poll(context.Background(), ups(keys...))
	checkAll(t, snap, want)
	if r := snap[big.Key]; r.Verdict != health.Failed || r.Err == nil || r.Err.Error() != "GET /v1/healthcheck/upstreams/u7: body exceeds the 65536-byte limit" {
		t.Errorf("oversize: %v, err %v", r.Verdict, r.Err)
	}
}

// Kept connections are reused across polls; one the server closed while
// idle is noticed before use and replaced, without a failed request; and
// CloseIdleConnections closes the kept ones.
func TestPerUpstreamKeptConnections(t *testing.T) {
	srv := apisixtest.New()
	defer srv.Close()
	keys, want := distinct(srv, 50)
	var mu sync.Mutex
	var open []net.Conn
	news, closed := 0, 0
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			news++
			open = append(open, c)
		case http.StateClosed:
			closed++
		}
	}
	ts.Start()
	defer ts.Close()
	c := newClient(t, ts.URL, apisix.Options{})
	poll := func() {
		t.Helper()
		checkAll(t, c.Poll(context.Background(), ups(keys...)), want)
	}
	// A connection whose work is done is kept and may serve another
	// connection's share of the same poll: at most 4 are dialled, over
	// any number of polls. The first poll may dial fewer (a connection
	// that finished early took another's share), and a later one the
	// rest; a client that kept nothing would dial at least one a poll,
	// more than 4 over five polls.
	poll()
	mu.Lock()
	first := news
	mu.Unlock()
	for range 4 {
		poll()
	}
	mu.Lock()
	if first < 1 || first > 4 || news > 4 {
		t.Errorf("%d connections after one poll, %d after five; want 1-4, at most 4 in all", first, news)
	}
	first = news
	// The server drops every connection while the client keeps them.
	for _, nc := range open {
		nc.Close()
	}
	mu.Unlock()
	poll()
	mu.Lock()
	dropped := news
	if dropped == first {
		t.Errorf("no connection dialled after the server dropped all %d", first)
	}
	mu.Unlock()

	// Closed kept connections are not used: the next poll dials.
	c.CloseIdleConnections()
	poll()
	mu.Lock()
	defer mu.Unlock()
	if news == dropped {
		t.Errorf("no connection dialled after CloseIdleConnections")
	}
}

// BenchmarkPerUpstream10000 is the client's side of a per_upstream poll of
// 10,000 resources: a raw server answers each request it reads with the
// same two-node body, as many answers in one write as it read requests, so
// that nearly all the CPU and allocations measured are the client's.
func BenchmarkPerUpstream10000(b *testing.B) {
	body := `{"name":"/apisix/upstreams/u","type":"http","nodes":[` +
		`{"counter":{"http_failure":0,"success":0,"tcp_failure":0,"timeout_failure":0},"hostname":"192.0.2.1","ip":"192.0.2.1","port":8000,"status":"healthy"},` +
		`{"counter":{"http_failure":0,"success":0,"tcp_failure":2,"timeout_failure":0},"hostname":"192.0.2.2","ip":"192.0.2.2","port":8001,"status":"unhealthy"}]}` + "\n"
	answer := fmt.Sprintf("HTTP/1.1 200 OK\r\nDate: Thu, 03 Dec 2026 14:00:00 GMT\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\nServer: APISIX/3.11.0\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				var out []byte
				partial := 0 // bytes of "\r\n\r\n" matched at the end of the last read
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					out = out[:0]
					for _, ch := range buf[:n] {
						switch {
						case ch == "\r\n\r\n"[partial]:
							partial++
						case ch == '\r':
							partial = 1
						default:
							partial = 0
						}
						if partial == 4 {
							partial = 0
							out = append(out, answer...)
						}
					}
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = fmt.Sprint("/apisix/upstreams/u", i)
	}
	up := ups(keys...)
	c := newClient(b, "http://"+ln.Addr().String(), apisix.Options{Mode: apisix.ModePerUpstream})
	defer c.CloseIdleConnections()
	b.ReportAllocs()
	for b.Loop() {
		if r := c.Poll(context.Background(), up)[keys[9999]]; r.Verdict != health.Up {
			b.Fatalf("got %v, err %v", r.Verdict, r.Err)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A server that sends one answer too many shifts it onto the next request
// on the connection; net/http may hand it over before it notices. The
// answer names another resource, so the request reads Failed, never that
// resource's health: b, unhealthy, is never read up from a's extra answer.
func TestPerUpstreamStaleAnswerIsNotUsed(t *testing.T) {
	answer := func(id, status string) string {
		body := `{"name":"/apisix/upstreams/` + id + `","type":"http","nodes":[{"ip":"10.0.0.1","port":80,"status":"` + status + `"}]}`
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	// The extra answer to a leaves with the next request's answer, so the
	// client has sent that request before it sees it.
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		extra := ""
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			ans := extra + answer("b", "unhealthy")
			extra = ""
			if strings.HasSuffix(req.URL.Path, "/a") {
				ans, extra = answer("a", "healthy"), answer("a", "healthy")
			}
			if _, err := io.WriteString(c, ans); err != nil {
				return
			}
		}
	})
	c := newClient(t, s.url(), apisix.Options{Mode: apisix.ModePerUpstream, MaxInFlight: 1})
	defer c.CloseIdleConnections()
	// Each read either gets its own answer or fails on the other's: a is
	// never read down (b's health), b never up (a's). Which one a read
	// gets depends on when net/http notices an answer on an idle
	// connection and drops it.
	stale := 0
	for range 50 {
		r := c.Poll(context.Background(), ups("/apisix/upstreams/a"))["/apisix/upstreams/a"]
		switch {
		case r.Verdict == health.Failed && r.Err != nil && strings.Contains(r.Err.Error(), `answer names "/apisix/upstreams/b", not upstreams/a`):
		case r.Verdict != health.Up:
			t.Fatalf("a: %v, err %v; want up, or failed on b's answer", r.Verdict, r.Err)
		}
		r = c.Poll(context.Background(), ups("/apisix/upstreams/b"))["/apisix/upstreams/b"]
		switch {
		case r.Verdict == health.Failed && r.Err != nil && strings.Contains(r.Err.Error(), `answer names "/apisix/upstreams/a", not upstreams/b`):
			stale++
		case r.Verdict != health.Down:
			t.Fatalf("b: %v, err %v; want down, or failed on a's answer", r.Verdict, r.Err)
		}
	}
	if stale == 0 {
		t.Error("no read of b got a's extra answer: the test did not shift the answers")
	}
}
