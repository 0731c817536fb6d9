package apisix

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/rhi-daemon/rhi/internal/health"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Per-upstream requests to a plain-http control API, from the client
// NewClient builds, are pipelined (HTTP/1.1, RFC 9112 §9.3.2): a few
// connections, each with up to pipeWindow requests written and not yet
// answered, the requests written many at a time in one write, the answers
// read in order with net/http's own parser (http.ReadResponse) out of one
// buffer. Go's Transport costs ~20 µs of CPU a request (a connection's two
// goroutines and their hand-offs, a write and a read each); this path costs
// a few (BENCHMARKS.md, issue 15). APISIX's control API is nginx, which
// answers pipelined requests one after another in order.
//
// Answers are matched to requests strictly by order. Anything a pipeline
// cannot be sure of drops the connection: an answer that cannot be parsed,
// a 1xx, a 204 or 304 (which has no body whatever its header says), a
// body over the bound or cut short, an HTTP/1.0 answer, bytes
// that arrive for no request. The request being answered then fails with
// what was wrong; the requests written after it were not answered and are
// sent again on another connection. nginx closes a connection after
// keepalive_requests (1000 by default) answers, saying "Connection: close"
// on the last: the requests after it are sent again too, which costs
// nothing but a dial.
//
// Connections are kept between polls (a 1 s poll would otherwise dial a few
// every second; the dial is cheap on loopback, but keeping them is what the
// Transport did and TestPollKeepAlive holds) and closed after
// pipeIdleTimeout unused, or by CloseIdleConnections. A kept connection is
// checked before it is used: one the server has closed, or that holds bytes
// nobody asked for, is closed and another dialled.
const (
	// pipeConns is how many connections a poll pipelines over, at most
	// MaxInFlight: nginx serves one request of a connection at a time, so
	// MaxInFlight still bounds the requests the server works on at once.
	pipeConns = 4
	// pipeWindow bounds the requests written and not answered on one
	// connection: ~6 KB of requests, which the kernel's buffers hold
	// whether or not the server reads, so a write never waits for an
	// answer that waits for a read. It also bounds what a close costs:
	// the requests sent again.
	pipeWindow = 64
	// pipeRetries is how many times a request whose connection closed
	// before any byte of its answer is sent again (a kept connection the
	// server closed meanwhile, as the Transport retries). Requests behind
	// it in the pipeline are sent again without counting: each connection
	// that ends that way charges the request at its head, so a poll dials
	// at most (pipeRetries+1) × requests connections, never loops.
	pipeRetries = 1
	// pipeIdleTimeout is the Transport's IdleConnTimeout: below the 60 s
	// keepalive_timeout of APISIX's nginx.
	pipeIdleTimeout = 50 * time.Second
	// pipeBuffer is the read buffer of a connection: ~100 answers.
	pipeBuffer = 32 << 10
	// pipeMaxHeader bounds an answer's header, as the Transport's
	// MaxResponseHeaderBytes did.
	pipeMaxHeader = 64 << 10
)

// pipeliner sends one poll's per-upstream requests over pipelined
// connections. It is safe for concurrent use.
type pipeliner struct {
	addr    string // host:port dialled
	host    string // Host header
	prefix  string // the base URL's path, escaped, without a trailing slash
	maxBody int64
	conns   int
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)

	mu        sync.Mutex
	idle      []*pconn
	closeIdle bool // set by closeIdleConns until the next poll takes a connection
}

// pconn is one connection of a pipeliner.
type pconn struct {
	nc    net.Conn
	lr    limitedConn
	br    *bufio.Reader
	wbuf  []byte
	body  []byte      // the last answer's body: classify keeps none of it
	timer *time.Timer // closes it after pipeIdleTimeout in the pool
}

// limitedConn fails a read past its limit, which is set per answer, so an
// endless header or chunked body cannot grow the buffer without bound.
type limitedConn struct {
	nc    net.Conn
	limit int64
}

var errAnswerTooLong = errors.New("answer exceeds its bound without ending")

func (l *limitedConn) Read(b []byte) (int, error) {
	if l.limit <= 0 {
		return 0, errAnswerTooLong
	}
	if int64(len(b)) > l.limit {
		b = b[:l.limit]
	}
	n, err := l.nc.Read(b)
	l.limit -= int64(n)
	return n, err
}

func newPipeliner(addr, host, prefix string, maxBody int64, conns int) *pipeliner {
	return &pipeliner{
		addr: addr, host: host, prefix: prefix, maxBody: maxBody, conns: conns,
		dial: (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
	}
}

// pipePoll is what one poll's connections share: the jobs, and a queue of
// those not yet sent or to be sent again.
type pipePoll struct {
	jobs    []job
	mu      sync.Mutex
	todo    []int // job indices, todo[next:] not yet taken
	next    int
	again   []int // job indices to send again, before todo
	retries []uint8
	// window is pipeWindow, or less when there are few jobs: a
	// connection holds at most its share of them, so every connection
	// gets some (MaxInFlight is reached) before one takes more.
	window int
}

// take appends up to n jobs to dst, those to send again first.
func (q *pipePoll) take(dst []int, n int) []int {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := min(n, len(q.again))
	dst = append(dst, q.again[len(q.again)-k:]...)
	q.again = q.again[:len(q.again)-k]
	k = min(n-k, len(q.todo)-q.next)
	dst = append(dst, q.todo[q.next:q.next+k]...)
	q.next += k
	return dst
}

// putBack queues jobs to be sent again.
func (q *pipePoll) putBack(js []int) {
	if len(js) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.again = append(q.again, js...)
}

// fetchAll answers jobs[todo] with pipelined requests.
func (p *pipeliner) fetchAll(ctx context.Context, jobs []job, todo []int) {
	conns := min(p.conns, len(todo))
	q := &pipePoll{jobs: jobs, todo: todo, retries: make([]uint8, len(jobs)), window: min(pipeWindow, (len(todo)+conns-1)/conns)}
	// Each connection's first batch is taken here, so that every one gets
	// its share before another takes more.
	var wg sync.WaitGroup
	for range conns {
		batch := q.take(make([]int, 0, q.window), q.window)
		wg.Go(func() { p.work(ctx, q, batch) })
	}
	wg.Wait()
}

// work runs connections until the queue is empty: a connection that is
// dropped leaves its unanswered requests in the queue, and this loop, or
// another's, takes them.
func (p *pipeliner) work(ctx context.Context, q *pipePoll, batch []int) {
	for ; ; batch = q.take(batch[:0], q.window) {
		if len(batch) == 0 {
			return
		}
		pc, err := p.get(ctx)
		if err != nil {
			for _, j := range batch {
				q.jobs[j].res = failed(fmt.Errorf("GET %s: %w", q.jobs[j].ref.Path(), err))
			}
			continue
		}
		r := pipeRun{p: p, pc: pc, q: q, ctx: ctx, out: batch}
		if r.serve() {
			p.put(pc)
		} else {
			_ = pc.nc.Close()
		}
		batch = r.out // reuse its array
	}
}

// get returns a kept connection that is still good, or dials one.
func (p *pipeliner) get(ctx context.Context) (*pconn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for {
		p.mu.Lock()
		p.closeIdle = false
		var pc *pconn
		if n := len(p.idle); n > 0 {
			pc = p.idle[n-1]
			p.idle = p.idle[:n-1]
		}
		p.mu.Unlock()
		if pc == nil {
			break
		}
		if pc.timer.Stop() && pc.usable() {
			return pc, nil
		}
		_ = pc.nc.Close()
	}
	nc, err := p.dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	pc := &pconn{nc: nc}
	pc.lr.nc = nc
	pc.br = bufio.NewReaderSize(&pc.lr, pipeBuffer)
	return pc, nil
}

// usable reports that a kept connection is open and holds no bytes: a peek
// that does not wait finds nothing to read, and no end of stream.
func (pc *pconn) usable() bool {
	if pc.br.Buffered() > 0 {
		return false
	}
	sc, ok := pc.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	if err := pc.nc.SetReadDeadline(time.Time{}); err != nil {
		return false
	}
	good := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		good = errors.Is(err, syscall.EAGAIN)
		return true // never wait
	})
	return err == nil && good
}

// put keeps a connection for the next poll.
func (p *pipeliner) put(pc *pconn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closeIdle {
		_ = pc.nc.Close()
		return
	}
	if pc.timer == nil {
		pc.timer = time.AfterFunc(pipeIdleTimeout, func() { p.expire(pc) })
	} else {
		pc.timer.Reset(pipeIdleTimeout)
	}
	p.idle = append(p.idle, pc)
}

// expire closes a connection left idle for pipeIdleTimeout.
func (p *pipeliner) expire(pc *pconn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.idle {
		if c == pc {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			_ = pc.nc.Close()
			return
		}
	}
}

// closeIdleConns closes the kept connections, and those that become idle
// until the next poll starts, as http.Transport.CloseIdleConnections.
func (p *pipeliner) closeIdleConns() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pc := range p.idle {
		pc.timer.Stop()
		_ = pc.nc.Close()
	}
	p.idle = nil
	p.closeIdle = true
}

// aLongTimeAgo is a deadline that has passed: setting it wakes every read
// and write of a connection at once.
var aLongTimeAgo = time.Unix(1, 0)

// pipeRun is one connection's part of a poll.
type pipeRun struct {
	p    *pipeliner
	pc   *pconn
	q    *pipePoll
	ctx  context.Context
	out  []int // jobs written (or being written) and not answered: out[head:], in order
	head int
}

// serve sends out and then what else the queue holds, reading answers in
// order, until the queue is empty and every request is answered. It
// reports whether the connection can be kept. Every job it took is
// answered, failed, or back in the queue when it returns.
func (r *pipeRun) serve() bool {
	nc := r.pc.nc
	stop := context.AfterFunc(r.ctx, func() { _ = nc.SetDeadline(aLongTimeAgo) })
	dl, _ := r.ctx.Deadline() // Poll's context always has one
	keep := false
	if err := nc.SetDeadline(dl); err != nil {
		r.drop(err)
	} else {
		keep = r.loop()
	}
	// A context that ended may have set the deadline in the past after
	// the loop: such a connection is not kept.
	return stop() && keep
}

func (r *pipeRun) loop() bool {
	if err := r.write(0); err != nil {
		return r.drop(err)
	}
	for r.head < len(r.out) {
		if len(r.out)-r.head <= r.q.window/2 {
			if err := r.refill(); err != nil {
				return r.drop(err)
			}
		}
		keep, err := r.readOne()
		if err != nil {
			return r.drop(err)
		}
		if !keep {
			r.q.putBack(r.out[r.head:])
			return false
		}
	}
	// Bytes beyond the last answer answer nothing we sent.
	return r.pc.br.Buffered() == 0
}

// refill writes more of the queue's jobs, up to the window.
func (r *pipeRun) refill() error {
	if r.head > 0 {
		n := copy(r.out, r.out[r.head:])
		r.out, r.head = r.out[:n], 0
	}
	from := len(r.out)
	r.out = r.q.take(r.out, r.q.window-from)
	if len(r.out) == from {
		return nil
	}
	return r.write(from)
}

// write sends the requests of out[from:] in one write.
func (r *pipeRun) write(from int) error {
	b := r.pc.wbuf[:0]
	for _, j := range r.out[from:] {
		b = append(b, "GET "...)
		b = append(b, r.p.prefix...)
		b = r.q.jobs[j].ref.AppendPath(b)
		b = append(b, " HTTP/1.1\r\nHost: "...)
		b = append(b, r.p.host...)
		b = append(b, "\r\nAccept: application/json\r\n\r\n"...)
	}
	r.pc.wbuf = b
	_, err := r.pc.nc.Write(b)
	return err
}

// readOne reads the answer to out[head] and records it. An error means no
// byte of that answer came (the connection closed, or the deadline): the
// caller drops the connection. keep is false when the answer was read but
// the connection cannot be trusted with the next one (its result is then
// recorded, often Failed).
func (r *pipeRun) readOne() (keep bool, err error) {
	j := r.out[r.head]
	r.pc.lr.limit = pipeMaxHeader + r.p.maxBody + 2*pipeBuffer
	if _, err := r.pc.br.Peek(1); err != nil {
		return false, err
	}
	resp, err := http.ReadResponse(r.pc.br, nil)
	if err != nil {
		if r.ended(err) != nil {
			return false, err
		}
		r.answer(j, failed(err))
		return false, nil
	}
	keep = !resp.Close && resp.ProtoMajor == 1 && resp.ProtoMinor == 1
	// A 204 or 304 has no body whatever its header says: bytes a broken
	// server sent as one would be read as the next request's answer.
	keep = keep && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
	if resp.StatusCode < 200 {
		// nginx sends no 1xx to a GET; what follows cannot be matched.
		r.answer(j, failed(fmt.Errorf("HTTP %d before an answer", resp.StatusCode)))
		return false, nil
	}
	// Into the connection's own buffer, which the next answer reuses: a
	// body per request was a third of the bytes a pipelined poll allocated.
	body, err := readBounded(resp.Body, resp.ContentLength, r.p.maxBody, r.pc.body[:0])
	if body != nil {
		r.pc.body = body
	}
	if err != nil {
		if r.ended(err) != nil {
			return false, err
		}
		r.answer(j, failed(err))
		return false, nil
	}
	r.answer(j, classify(resp.StatusCode, resp.Header.Get("Content-Type"), body))
	if cap(r.pc.body) > 64<<10 {
		r.pc.body = nil // a rare large body is not kept with the connection
	}
	return keep, nil
}

// answer records job j's result: the answer to out[head].
func (r *pipeRun) answer(j int, res health.Result) {
	if res.Err != nil {
		res.Err = fmt.Errorf("GET %s: %w", r.q.jobs[j].ref.Path(), res.Err)
	}
	r.q.jobs[j].res = res
	r.head++
}

// ended returns the context's error when err comes from the poll's end:
// its deadline (which the connection's deadline is), or its cancellation
// (which sets the connection's deadline in the past).
func (r *pipeRun) ended(err error) error {
	if cerr := r.ctx.Err(); cerr != nil {
		return cerr
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return nil
}

// drop settles the jobs of a connection that failed before out[head] was
// answered. At the poll's end they all fail with the context's error.
// Otherwise the head is sent again pipeRetries times, then fails with err;
// the jobs behind it go back to the queue. It returns false: the
// connection is not kept.
func (r *pipeRun) drop(err error) bool {
	rest := r.out[r.head:]
	if cerr := r.ended(err); cerr != nil {
		for range rest {
			r.answer(r.out[r.head], failed(cerr))
		}
		return false
	}
	if len(rest) == 0 {
		return false
	}
	if j := rest[0]; r.q.retries[j] < pipeRetries {
		r.q.retries[j]++
	} else {
		r.answer(j, failed(err))
		rest = rest[1:]
	}
	r.q.putBack(rest)
	return false
}

// pipelineFor returns the pipeliner for a plain-http base URL, nil for
// https (which keeps net/http's path).
func pipelineFor(u *url.URL, maxBody int64, maxInFlight int) *pipeliner {
	if u.Scheme != "http" {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return newPipeliner(net.JoinHostPort(u.Hostname(), port), u.Host,
		strings.TrimSuffix(u.EscapedPath(), "/"), maxBody, min(pipeConns, maxInFlight))
}
