package apisix_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/health"
)

// Attacks on the per-upstream client with a raw server: whatever the
// server sends, a request gets its own answer or fails.

// nodesBody is a body of total nodes, healthy of them healthy: Healthy and
// Total say which answer a request got.
func nodesBody(id string, healthy, total int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"name":"/apisix/upstreams/%s","type":"http","nodes":[`, id)
	for k := range total {
		if k > 0 {
			b.WriteByte(',')
		}
		st := "unhealthy"
		if k < healthy {
			st = "healthy"
		}
		fmt.Fprintf(&b, `{"ip":"10.0.0.1","port":%d,"status":"%s"}`, 80+k, st)
	}
	b.WriteString("]}")
	return b.String()
}

func lengthAnswer(body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// idOf is the last segment of a request's path.
func idOf(r *http.Request) string { return r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:] }

// numbered are n keys u0..u(n-1) and what each one's own answer
// (answerFor) says: u_i has i%3 healthy of i%3+1+i/3 nodes.
func numbered(n int) (keys []string, want map[string]got) {
	want = map[string]got{}
	for i := range n {
		k := fmt.Sprint("/apisix/upstreams/u", i)
		keys = append(keys, k)
		v := health.Down
		if i%3 > 0 {
			v = health.Up
		}
		want[k] = got{v, i % 3, i%3 + 1 + i/3}
	}
	return keys, want
}

func bodyFor(id string) string {
	i, _ := strconv.Atoi(strings.TrimPrefix(id, "u"))
	return nodesBody(id, i%3, i%3+1+i/3)
}

// checkOwnOrFailed: every result is its own answer, or Failed; never
// another resource's answer. It returns how many were Failed.
func checkOwnOrFailed(t *testing.T, snap health.Snapshot, want map[string]got) int {
	t.Helper()
	failedN := 0
	for k, w := range want {
		r := snap[k]
		if r.Verdict == health.Failed {
			failedN++
			continue
		}
		if g := (got{r.Verdict, int(r.Healthy), int(r.Total)}); g != w {
			t.Errorf("%s: got %+v, want %+v (its own answer) or Failed", k, g, w)
		}
	}
	return failedN
}

// passCtx is a poll's context whose deadline passes when the test calls
// pass, not at a time: a server that holds a poll up tells the test when
// it has, and the poll then meets its deadline exactly there, however
// slow the machine, without a wait.
type passCtx struct {
	context.Context // Background: no values, no deadline of its own
	done            chan struct{}
	once            sync.Once
}

func newPassCtx() *passCtx { return &passCtx{Context: context.Background(), done: make(chan struct{})} }

func (c *passCtx) pass()                 { c.once.Do(func() { close(c.done) }) }
func (c *passCtx) Done() <-chan struct{} { return c.done }

func (c *passCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A 204 (or 304) has no body whatever its header says (RFC 9112 §6.3), so
// bytes a broken server sends after one are parsed as the NEXT answer: the
// request pipelined behind would get an answer its server wrote for
// another. A pipeline cannot tell, so it must not keep the connection
// after a 204/304 (the Transport, which does not pipeline, drops the
// connection on such unsolicited bytes).
func TestPerUpstreamNoBodyStatusSmuggles(t *testing.T) {
	for _, status := range []string{"204 No Content", "304 Not Modified"} {
		t.Run(status, func(t *testing.T) {
			smuggled := lengthAnswer(nodesBody("b", 3, 3)) // b all healthy: a lie
			s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					var ans string
					switch idOf(req) {
					case "a":
						ans = fmt.Sprintf("HTTP/1.1 %s\r\nContent-Length: %d\r\n\r\n%s", status, len(smuggled), smuggled)
					default: // b's own answer: all down
						ans = lengthAnswer(nodesBody(idOf(req), 0, 3))
					}
					if _, err := io.WriteString(c, ans); err != nil {
						return
					}
				}
			})
			c := newClient(t, s.url(), apisix.Options{Mode: apisix.ModePerUpstream, MaxInFlight: 1})
			defer c.CloseIdleConnections()
			snap := c.Poll(context.Background(), ups("/apisix/upstreams/a", "/apisix/upstreams/b"))
			if r := snap["/apisix/upstreams/a"]; r.Verdict != health.Failed {
				t.Errorf("a: %v, want Failed", r.Verdict)
			}
			if r := snap["/apisix/upstreams/b"]; r.Verdict != health.Down && r.Verdict != health.Failed {
				t.Errorf("b: %v (%d/%d), want its own answer (Down) or Failed: another request's bytes were read as its answer", r.Verdict, r.Healthy, r.Total)
			}
		})
	}
}

// Every answer coding nginx or a proxy could use, each written
// one byte a write (so reads end at every boundary): each request gets its
// own answer.
func TestPerUpstreamCodingsSplitEverywhere(t *testing.T) {
	codings := map[string]func(body string) string{
		"length": lengthAnswer,
		"chunked ext trailer": func(body string) string {
			h := len(body) / 2
			return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x;foo=bar\r\n%s\r\n%x;q=\"x\"\r\n%s\r\n0;last\r\nX-Trailer: 1\r\n\r\n", h, body[:h], len(body)-h, body[h:])
		},
		"chunked and length": func(body string) string {
			return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
		},
		"keep-alive headers": func(body string) string {
			return fmt.Sprintf("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		},
	}
	for name, code := range codings {
		t.Run(name, func(t *testing.T) {
			s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					ans := code(bodyFor(idOf(req)))
					for i := range len(ans) {
						if _, err := c.Write([]byte{ans[i]}); err != nil {
							return
						}
					}
				}
			})
			keys, want := numbered(12)
			c := newClient(t, s.url(), apisix.Options{Mode: apisix.ModePerUpstream, MaxInFlight: 2})
			defer c.CloseIdleConnections()
			for range 2 {
				checkAll(t, c.Poll(context.Background(), ups(keys...)), want)
			}
			if n := s.conns.Load(); n > 2 {
				t.Errorf("%d connections for two polls at MaxInFlight 2, want them kept", n)
			}
		})
	}
}

// A server that closes after n answers, at every n, with "Connection: close"
// on the last, or silently, or by half-closing (CloseWrite) while it still
// reads, or with an RST: no request gets another's answer.
func TestPerUpstreamServerEndsAfterN(t *testing.T) {
	for _, how := range []string{"close header", "silent", "half-close", "rst"} {
		for n := 1; n <= 6; n++ {
			t.Run(fmt.Sprint(how, " ", n), func(t *testing.T) {
				s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
					for i := 1; ; i++ {
						req, err := http.ReadRequest(br)
						if err != nil {
							return
						}
						ans := lengthAnswer(bodyFor(idOf(req)))
						if i == n && how == "close header" {
							ans = strings.Replace(ans, "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1)
						}
						if _, err := io.WriteString(c, ans); err != nil {
							return
						}
						if i < n {
							continue
						}
						switch how {
						case "half-close":
							_ = c.(*net.TCPConn).CloseWrite()
							_, _ = io.Copy(io.Discard, br)
						case "rst":
							_ = c.(*net.TCPConn).SetLinger(0)
						}
						return
					}
				})
				keys, want := numbered(20)
				c := newClient(t, s.url(), apisix.Options{Mode: apisix.ModePerUpstream})
				defer c.CloseIdleConnections()
				for range 2 {
					snap := c.Poll(context.Background(), ups(keys...))
					f := checkOwnOrFailed(t, snap, want)
					if how == "close header" && f > 0 {
						t.Errorf("%d Failed with nginx's keepalive close", f)
					}
				}
			})
		}
	}
}

// An answer held back until the poll ended (cancelled, or its deadline)
// is never read by the next poll as that poll's answer: the connection it
// was due on is not kept. The deadline passes once the server holds the
// answer back.
func TestPerUpstreamLateAnswerNotNextPolls(t *testing.T) {
	for _, end := range []string{"cancel", "deadline"} {
		t.Run(end, func(t *testing.T) {
			stalled := make(chan struct{})
			release := make(chan struct{})
			var once sync.Once
			s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
				for i := 0; ; i++ {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					first := false
					once.Do(func() { first = true })
					if first {
						close(stalled)
						<-release
						// Poll 1's answer: all healthy.
						_, _ = io.WriteString(c, lengthAnswer(nodesBody("a", 2, 2)))
						continue
					}
					// Every later answer: all down.
					if _, err := io.WriteString(c, lengthAnswer(nodesBody("a", 0, 2))); err != nil {
						return
					}
				}
			})
			var ctx context.Context
			if end == "deadline" {
				pc := newPassCtx()
				go func() { <-stalled; pc.pass() }()
				ctx = pc
			} else {
				cctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() { <-stalled; cancel() }()
				ctx = cctx
			}
			c := newClient(t, s.url(), apisix.Options{Mode: apisix.ModePerUpstream, MaxInFlight: 1, Timeout: time.Hour})
			defer c.CloseIdleConnections()
			key := "/apisix/upstreams/a"
			r := c.Poll(ctx, ups(key))[key]
			wantErr := map[string]error{"cancel": context.Canceled, "deadline": context.DeadlineExceeded}[end]
			if r.Verdict != health.Failed || !errors.Is(r.Err, wantErr) {
				t.Errorf("poll 1: %v, err %v; want Failed, %v", r.Verdict, r.Err, wantErr)
			}
			close(release)
			<-stalled
			r = c.Poll(context.Background(), ups(key))[key]
			if r.Verdict != health.Down {
				t.Errorf("poll 2: %v (%d/%d, err %v), want Down: poll 1's late answer read as poll 2's", r.Verdict, r.Healthy, r.Total, r.Err)
			}
		})
	}
}

// A server that drips its answer one byte a millisecond (a header that
// never ends, or a body) cannot hold a poll past its deadline. The
// deadline passes once the server has dripped a few times, so the poll
// meets it in the middle of the drip.
func TestPerUpstreamSlowLoris(t *testing.T) {
	for _, what := range []string{"header", "body"} {
		t.Run(what, func(t *testing.T) {
			ctx := newPassCtx()
			done := make(chan struct{})
			s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				if what == "body" {
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
				} else {
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Slow: ")
				}
				tick := time.NewTicker(time.Millisecond)
				defer tick.Stop()
				for drips := 0; ; drips++ {
					if drips == 5 {
						ctx.pass()
					}
					select {
					case <-done:
						return
					case <-tick.C:
					}
					b := "a"
					if what == "body" {
						b = "1\r\n \r\n"
					}
					if _, err := io.WriteString(c, b); err != nil {
						return
					}
				}
			})
			defer close(done)
			c := newClient(t, s.url(), apisix.Options{Mode: apisix.ModePerUpstream, Timeout: time.Hour})
			defer c.CloseIdleConnections()
			key := "/apisix/upstreams/a"
			r := c.Poll(ctx, ups(key))[key]
			if r.Verdict != health.Failed || !errors.Is(r.Err, context.DeadlineExceeded) {
				t.Errorf("%v, err %v; want Failed, deadline exceeded", r.Verdict, r.Err)
			}
		})
	}
}

// A body of exactly MaxBodyBytes is read; one byte more fails that
// request only, in both codings, and the next request still gets its own.
func TestPerUpstreamBodyAtLimit(t *testing.T) {
	body := nodesBody("a", 1, 1) + "          " // longer than u0's
	for _, chunked := range []bool{false, true} {
		for _, extra := range []int{0, 1} {
			t.Run(fmt.Sprint("chunked ", chunked, " extra ", extra), func(t *testing.T) {
				s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
					for {
						req, err := http.ReadRequest(br)
						if err != nil {
							return
						}
						b := bodyFor(idOf(req))
						if idOf(req) == "a" {
							b = body + strings.Repeat(" ", extra)
						}
						ans := lengthAnswer(b)
						if chunked {
							ans = fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(b), b)
						}
						if _, err := io.WriteString(c, ans); err != nil {
							return
						}
					}
				})
				c := newClient(t, s.url(), apisix.Options{Mode: apisix.ModePerUpstream, MaxInFlight: 1, MaxBodyBytes: int64(len(body))})
				defer c.CloseIdleConnections()
				// u0's body is shorter than a's.
				snap := c.Poll(context.Background(), ups("/apisix/upstreams/a", "/apisix/upstreams/u0"))
				r := snap["/apisix/upstreams/a"]
				if extra == 0 && r.Verdict != health.Up {
					t.Errorf("a at the limit: %v, err %v; want Up", r.Verdict, r.Err)
				}
				if extra == 1 && (r.Verdict != health.Failed || r.Err == nil || !strings.Contains(r.Err.Error(), "limit")) {
					t.Errorf("a one byte over: %v, err %v; want Failed over the limit", r.Verdict, r.Err)
				}
				if r := snap["/apisix/upstreams/u0"]; r.Verdict != health.Down || r.Total != 1 {
					t.Errorf("u0: %v %d/%d, err %v; want its own answer", r.Verdict, r.Healthy, r.Total, r.Err)
				}
			})
		}
	}
}

// Huge headers: fail the request they answer, bounded, and the rest are
// answered. The 8 MiB header is written as it goes, a piece at a time, so
// the server makes only what the client reads before it gives up.
func TestPerUpstreamHugeHeader(t *testing.T) {
	piece := []byte(strings.Repeat("x", 64<<10))
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			ans := lengthAnswer(bodyFor(idOf(req)))
			if idOf(req) == "u1" {
				head, rest, _ := strings.Cut(ans, "\r\n\r\n")
				if _, err := io.WriteString(c, head+"\r\nX-Big: "); err != nil {
					return
				}
				for range (8 << 20) / len(piece) {
					if _, err := c.Write(piece); err != nil {
						return
					}
				}
				ans = "\r\n\r\n" + rest
			}
			if _, err := io.WriteString(c, ans); err != nil {
				return
			}
		}
	})
	keys, want := numbered(5)
	c := newClient(t, s.url(), apisix.Options{Mode: apisix.ModePerUpstream, MaxInFlight: 1})
	defer c.CloseIdleConnections()
	snap := c.Poll(context.Background(), ups(keys...))
	if r := snap[keys[1]]; r.Verdict != health.Failed {
		t.Errorf("u1 with an 8 MiB header: %v, want Failed", r.Verdict)
	}
	delete(want, keys[1])
	checkAll(t, snap, want)
}

// Concurrent Polls on one Client (verify and the daemon), with
// CloseIdleConnections called throughout: every answer is its own.
func TestPerUpstreamConcurrentPollsAndCloseIdle(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if _, err := io.WriteString(c, lengthAnswer(bodyFor(idOf(req)))); err != nil {
				return
			}
		}
	})
	keys, want := numbered(60)
	// A minute: the pollers share the client's two connections, and with
	// them closed throughout each request dials; the subject is whose
	// answer each gets, not how fast.
	c := newClient(t, s.url(), apisix.Options{Mode: apisix.ModePerUpstream, Timeout: time.Minute})
	defer c.CloseIdleConnections()
	stop := make(chan struct{})
	var closer sync.WaitGroup
	closer.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				c.CloseIdleConnections()
				runtime.Gosched()
			}
		}
	})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for range 3 {
				// Each poller its own subset, so each Poll's jobs differ.
				snap := c.Poll(context.Background(), ups(keys[g*10:]...))
				for _, k := range keys[g*10:] {
					r := snap[k]
					if gg := (got{r.Verdict, int(r.Healthy), int(r.Total)}); gg != want[k] {
						t.Errorf("poller %d: %s: got %+v (err %v), want %+v", g, k, gg, r.Err, want[k])
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	closer.Wait()
}

// A server (or a proxy between) that answers one resource's request with
// another's body: a broken proxy reordering answers, a Content-Length that
// understates a body and carries another answer. The body's name is not
// the resource asked for, so the answer reads Failed.
func TestPerUpstreamEchoedOtherBody(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if _, err := io.WriteString(c, lengthAnswer(nodesBody("other", 2, 2))); err != nil {
				return
			}
		}
	})
	c := newClient(t, s.url(), apisix.Options{Mode: apisix.ModePerUpstream})
	defer c.CloseIdleConnections()
	key := "/apisix/upstreams/a"
	if r := c.Poll(context.Background(), ups(key))[key]; r.Verdict != health.Failed {
		t.Errorf("a answered with /apisix/upstreams/other's body: %v, want Failed", r.Verdict)
	}
}

// A poll cancelled while one of its four connections is held mid-batch
// (the others answered or answering), then a poll on the same Client after
// the held answer is let go: every answer of the second poll is its own.
func TestPerUpstreamCancelMidBatchThenPoll(t *testing.T) {
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			id := idOf(req)
			if id == "u50" {
				once.Do(func() {
					close(held)
					<-release
					// Late, and a lie: u50 all healthy.
					_, _ = io.WriteString(c, lengthAnswer(nodesBody(id, 9, 9)))
					id = ""
				})
				if id == "" {
					continue
				}
			}
			if _, err := io.WriteString(c, lengthAnswer(bodyFor(id))); err != nil {
				return
			}
		}
	})
	keys, want := numbered(200)
	c := newClient(t, s.url(), apisix.Options{Mode: apisix.ModePerUpstream, Timeout: time.Hour})
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-held; cancel() }()
	snap := c.Poll(ctx, ups(keys...))
	checkOwnOrFailed(t, snap, want)
	if r := snap[keys[50]]; r.Verdict != health.Failed || !errors.Is(r.Err, context.Canceled) {
		t.Errorf("held u50: %v, err %v; want Failed, canceled", r.Verdict, r.Err)
	}
	close(release)
	for range 2 {
		checkAll(t, c.Poll(context.Background(), ups(keys...)), want)
	}
}
