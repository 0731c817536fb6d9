package apisix

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rhi-daemon/rhi/internal/health"
)

// Defaults for Options fields left zero.
const (
	DefaultTimeout      = 5 * time.Second // apisix_timeout
	DefaultMaxBodyBytes = 4 << 20
	// DefaultMaxInFlight is how many one-upstream requests a poll has
	// open at once, each on its own kept-alive connection. The control API
	// is served by the nginx workers that carry APISIX's traffic, and a
	// request there waits behind whatever the worker is doing: two at a
	// time keep rhi's requests from queueing behind each other in a
	// worker, while a poll of 10,000 of them still fits apisix_timeout
	// where APISIX answers each in under 1 ms.
	DefaultMaxInFlight = 2
	// DefaultMaxListBytes bounds the list body: it holds every checker
	// APISIX has, ~340 bytes per two-node resource, so this is room for
	// about 190,000 of them.
	DefaultMaxListBytes = 64 << 20
	// DefaultMaxListEntries bounds the list's entries, whatever their
	// size: about what DefaultMaxListBytes holds of real entries, so that
	// a list of tiny ones (1.5 M in 60 MiB) is given up after a small part
	// of the time decoding it all would take.
	DefaultMaxListEntries = 200_000
)

// dialTimeout bounds connection set-up on its own, so a black-holed control
// API fails fast even when the poll deadline is long. The poll's context
// deadline still applies on top.
const dialTimeout = 2 * time.Second

// Options configures a Client. Zero fields take the defaults above.
type Options struct {
	// Timeout is the deadline of one Poll's HTTP work, all requests
	// together (apisix_timeout).
	Timeout time.Duration
	// MaxBodyBytes bounds each response body; a longer body is Failed.
	// It also bounds one entry of the list (at least 64 KiB).
	MaxBodyBytes int64
	// Mode is how a poll reads the control API (apisix_poll_mode); empty
	// is ModeAuto, the config's default.
	Mode Mode
	// MaxListBytes bounds the body of the list (GET /v1/healthcheck); a
	// longer list is not used and its keys are fetched one by one.
	MaxListBytes int64
	// MaxListEntries bounds the list's entries in the same way.
	MaxListEntries int
	// MaxInFlight bounds the requests one Poll runs at the same time,
	// and so the connections it keeps: one request at a time on each.
	MaxInFlight int
	// HTTPClient replaces the client NewClient builds. It is used as given:
	// its transport decides proxies, keep-alive and redirects.
	HTTPClient *http.Client
}

// Client polls the APISIX control API. It is safe for concurrent use.
type Client struct {
	base        string // scheme://host[:port][/path], no trailing slash
	timeout     time.Duration
	maxBody     int64
	maxInFlight int
	mode        Mode
	maxList     int64
	maxEntries  int // of the list
	hc          *http.Client
	// rt is hc's transport when NewClient built hc: requests then go
	// straight to it, without http.Client's work per request (a copy of
	// the headers for redirects, which are never followed, and of the
	// request), a few µs of the ~20 each of 10,000 requests a poll costs
	// in per_upstream mode.
	rt http.RoundTripper
	// costs remembers what the control API's requests took (cost.go):
	// ModeAuto chooses by it, and Cost reports it.
	costs costMemory
	auto  autoState // ModeAuto's memory of the list's last answers
	// listTimeout bounds the list request with its share of the poll's
	// deadline: context.WithTimeout, or a test's stand-in that also ends
	// it when the fake server stalls (export_test.go).
	listTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)
	// connSeq orders the requests of a poll on their connections
	// (connNote).
	connSeq atomic.Uint64
	// scratch is the last poll's jobs, kept for the next (takeJobs).
	scratchMu sync.Mutex
	scratch   []job
}

// acceptJSON is the header of every request: APISIX 3.3+ answers HTML to
// clients that accept it. It is shared by the requests that go straight to
// the transport, which never changes a request's header.
var acceptJSON = http.Header{"Accept": {"application/json"}}

// NewClient returns a client for the control API at baseURL, e.g.
// "http://127.0.0.1:9090".
func NewClient(baseURL string, opts Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("control url %q: %w", baseURL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("control url %q: scheme must be http or https", baseURL)
	case u.Host == "":
		return nil, fmt.Errorf("control url %q: no host", baseURL)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, fmt.Errorf("control url %q: must not have user info, query or fragment", baseURL)
	case opts.Timeout < 0 || opts.MaxBodyBytes < 0 || opts.MaxInFlight < 0 || opts.MaxListBytes < 0 || opts.MaxListEntries < 0:
		return nil, errors.New("timeout, max body bytes, max list bytes, max list entries and max in flight must not be negative")
	case !validMode(opts.Mode):
		return nil, fmt.Errorf("poll mode %q: unknown (allowed: %s, %s, %s)", opts.Mode, ModePerUpstream, ModeList, ModeAuto)
	}
	c := &Client{
		base:        strings.TrimSuffix(u.String(), "/"),
		timeout:     cmp.Or(opts.Timeout, DefaultTimeout),
		maxBody:     cmp.Or(opts.MaxBodyBytes, DefaultMaxBodyBytes),
		maxInFlight: cmp.Or(opts.MaxInFlight, DefaultMaxInFlight),
		mode:        cmp.Or(opts.Mode, ModeAuto),
		maxList:     cmp.Or(opts.MaxListBytes, DefaultMaxListBytes),
		maxEntries:  cmp.Or(opts.MaxListEntries, DefaultMaxListEntries),
		hc:          opts.HTTPClient,
		listTimeout: context.WithTimeout,
	}
	if c.hc == nil {
		c.hc = newHTTPClient(c.maxInFlight)
		c.rt = c.hc.Transport
	}
	return c, nil
}

func newHTTPClient(maxInFlight int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			// The control API listens on loopback; an http_proxy meant
			// for the outside world must not capture it.
			Proxy:       nil,
			DialContext: (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			// Enough idle connections that every request of the next poll
			// finds one, so a steady poll dials nothing.
			MaxIdleConns:        maxInFlight,
			MaxIdleConnsPerHost: maxInFlight,
			// One request per connection and no more connections than
			// requests at once: the control API sees at most
			// maxInFlight of rhi's requests at a time, never a burst.
			MaxConnsPerHost: maxInFlight,
			// Below the 60 s keepalive_timeout of APISIX's nginx, so we
			// drop an idle connection before the server does.
			IdleConnTimeout:        50 * time.Second,
			TLSHandshakeTimeout:    dialTimeout,
			MaxResponseHeaderBytes: 64 << 10,
		},
		// The control API never redirects; following one would leave
		// the host we were told to trust.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Poll reads the health of every upstream and returns one Result per
// distinct key. Keys naming the same resource (repeated, or with different
// etcd prefixes) are read once. A key is parsed (ParseRef) when its plan is
// made, so a poll of a plan parses no key; a key that ParseRef rejects is
// Failed without a request.
//
// All requests share one deadline: the client's timeout, or ctx's if that
// comes first. The client applies apisix_timeout here, and only here, so
// that every caller (the daemon's tick, `rhi verify`'s fresh poll) gets the
// same bound without arranging it; callers pass their own context only to
// cancel (shutdown) or to shorten it.
//
// In ModeList (and ModeAuto when it picks the list) the resources the list
// holds are answered from it and only the rest are fetched one by one; see
// Mode for what happens when the list cannot be used.
func (c *Client) Poll(ctx context.Context, ups []health.Upstream) health.Snapshot {
	snap, _ := c.pollPlan(ctx, NewPlan(ups), PollOptions{})
	return snap
}

// PollOptions shape one poll (health.PollOptions: the daemon's words).
type PollOptions = health.PollOptions

// Plan parses ups for polls of them (NewPlan), which keeps ups: a caller
// that polls the same keys again and again builds the plan once and hands
// it to every PollPlan instead of paying for it at each poll.
func (c *Client) Plan(ups []health.Upstream) health.Plan { return NewPlan(ups) }

// PollPlan is Poll of plan's upstreams, shaped by opts. It also returns
// what the poll cost the control API as the client measured it. A plan
// the client did not make is planned again.
func (c *Client) PollPlan(ctx context.Context, plan health.Plan, opts PollOptions) (health.Snapshot, Cost) {
	p, ok := plan.(*Plan)
	if !ok {
		p = NewPlan(plan.Upstreams())
	}
	return c.pollPlan(ctx, p, opts)
}

func (c *Client) pollPlan(ctx context.Context, plan *Plan, opts PollOptions) (health.Snapshot, Cost) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	var cost Cost
	jobs := c.takeJobs(plan.Resources()) // one per distinct resource
	defer c.giveJobs(jobs)
	for j := range jobs {
		jobs[j].ref = plan.Resource(j)
	}
	if !opts.NoList && c.listFirst(len(jobs)) {
		usable := c.fromList(ctx, jobs, plan, &cost)
		if c.mode == ModeAuto && !usable {
			c.auto.pause()
		}
		if usable && c.mode == ModeAuto {
			c.sampleOne(ctx, jobs, &cost)
		}
	}
	c.fetchEach(ctx, jobs, opts.Spread, &cost)
	c.costs.add(cost, c.auto.polls.Load())

	ups := plan.Upstreams()
	snap := make(health.Snapshot, len(ups))
	for i, u := range ups {
		if j, ok := plan.KeyResource(i); ok {
			snap[u.Key] = jobs[j].res
		} else {
			_, err := ParseRef(u.Key)
			snap[u.Key] = health.Result{Verdict: health.Failed, Err: fmt.Errorf("key %q: %w", u.Key, err)}
		}
	}
	return snap, cost
}

// CloseIdleConnections closes the connections the client keeps alive
// between polls, and any that become idle later. Call it when the client
// is replaced (a reload that changes the control URL, timeout or mode):
// an abandoned client's connections otherwise stay open until their idle
// timeout, 50 s. A later Poll dials again.
func (c *Client) CloseIdleConnections() {
	c.hc.CloseIdleConnections()
}

// takeJobs lends a poll n zeroed jobs: the ones the last poll gave back
// when they are enough, else new ones. New jobs at every poll would be
// garbage in proportion to the resources (~90 bytes each), and at rhi's
// GOGC (25) the collector's work follows the garbage a poll makes. Only
// the daemon's loop polls a client often; a poll that overlaps another
// gets new ones.
func (c *Client) takeJobs(n int) []job {
	c.scratchMu.Lock()
	jobs := c.scratch
	c.scratch = nil
	c.scratchMu.Unlock()
	if cap(jobs) < n {
		return make([]job, n)
	}
	jobs = jobs[:n]
	clear(jobs)
	return jobs
}

// giveJobs keeps jobs for the next poll, holding no error or name of this
// one's.
func (c *Client) giveJobs(jobs []job) {
	clear(jobs)
	c.scratchMu.Lock()
	c.scratch = jobs
	c.scratchMu.Unlock()
}

// job is one distinct resource of a poll and what was learned about it.
type job struct {
	ref    Ref
	res    health.Result
	done   bool  // answered by the list
	listed int32 // entries of the list that named ref
}

// fetchEach reads every job the list has not answered, one request each,
// at most maxInFlight at a time, spread over spread (PollOptions.Spread).
func (c *Client) fetchEach(ctx context.Context, jobs []job, spread time.Duration, cost *Cost) {
	todo := make([]int, 0, len(jobs))
	for i := range jobs {
		if !jobs[i].done {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return // the list answered every one
	}
	var gap time.Duration
	if spread > 0 && len(todo) > 1 {
		deadline, _ := ctx.Deadline() // Poll's context always has one
		spread = min(spread, time.Until(deadline)/2)
		gap = spread / time.Duration(len(todo))
	}
	start := time.Now()
	took := make([]time.Duration, len(todo))
	notes := make([]connNote, len(todo))
	// A fixed set of workers pulling indices keeps at most maxInFlight
	// requests (and so connections) open, however many keys there are.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(c.maxInFlight, len(todo)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(todo) {
					return
				}
				if gap > 0 {
					// Cut short by ctx, the request is still sent, and
					// fails with the context's error like the others.
					waitUntil(ctx, start.Add(time.Duration(i)*gap))
				}
				j := todo[i]
				t0 := time.Now()
				jobs[j].res = c.fetchNoted(ctx, jobs[j].ref, &notes[i])
				took[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	for _, d := range took {
		countOne(cost, d)
	}
	distrustAfterNoBody(jobs, todo, notes)
}

// connNote is which kept connection a one-upstream request went over, in
// which order (seq), and whether its answer was a status that has no body
// whatever its header says (204, 304).
type connNote struct {
	conn   net.Conn
	seq    uint64
	noBody bool
}

// distrustAfterNoBody fails every request sent over a connection after it
// answered a 204 or 304. Such a status has no body, so bytes a broken
// server sends after one (a body its Content-Length announced) are parsed
// as the answer to the next request on that connection: an answer the
// server wrote for another. net/http drops a connection when bytes arrive
// while it is idle, but a request that took the connection first reads
// them. The connection itself is closed when the 204/304 arrives
// (fetchNoted), so later polls never meet it.
func distrustAfterNoBody(jobs []job, todo []int, notes []connNote) {
	for i := range notes {
		if !notes[i].noBody || notes[i].conn == nil {
			continue
		}
		for k := range notes {
			if notes[k].conn == notes[i].conn && notes[k].seq > notes[i].seq {
				j := todo[k]
				jobs[j].res = failed(fmt.Errorf("GET %s: sent over a connection that had answered a request with a status without a body: the answer cannot be told from bytes sent after that status", refPath(jobs[j].ref)))
			}
		}
	}
}

// waitUntil waits until t, or until ctx ends, which it reports as false.
func waitUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// fetch reads one resource's health checker.
func (c *Client) fetch(ctx context.Context, ref Ref) health.Result {
	return c.fetchNoted(ctx, ref, nil)
}

// fetchNoted is fetch that, when note is not nil, notes the connection the
// request went over (connNote); a 204 or 304 answer closes it.
func (c *Client) fetchNoted(ctx context.Context, ref Ref, note *connNote) health.Result {
	path := refPath(ref)
	if note != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			note.conn, note.seq = i.Conn, c.connSeq.Add(1)
		}})
	}
	a, err := c.do(ctx, path, c.maxBody)
	var r health.Result
	if err != nil {
		r = failed(err)
	} else {
		var about string
		r, about = classify(a.status, a.contentType, a.body)
		if err := answersFor(a.status, about, ref); err != nil && r.Verdict != health.Failed {
			r = failed(err)
		}
		if note != nil && (a.status == http.StatusNoContent || a.status == http.StatusNotModified) {
			note.noBody = true
			if note.conn != nil {
				note.conn.Close()
			}
		}
	}
	if r.Err != nil {
		r.Err = fmt.Errorf("GET %s: %w", path, r.Err)
	}
	return r
}

// reply is a complete HTTP answer.
type reply struct {
	status      int
	contentType string
	body        []byte
}

// do sends GET path and reads the whole answer, its body bounded by limit.
func (c *Client) do(ctx context.Context, path string, limit int64) (reply, error) {
	resp, err := c.send(ctx, path)
	if err != nil {
		return reply{}, err
	}
	// Reading the body to its end (below) is what lets the transport reuse
	// the connection; Close without that drops it.
	defer resp.Body.Close()
	body, err := readBounded(resp.Body, resp.ContentLength, limit, nil)
	if err != nil {
		return reply{}, err
	}
	return reply{resp.StatusCode, resp.Header.Get("Content-Type"), body}, nil
}

// send sends GET path; the caller reads and closes the body.
func (c *Client) send(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	var resp *http.Response
	if c.rt != nil {
		// The client NewClient builds follows no redirect, has no
		// cookie jar and no timeout of its own: its Do would add only
		// copies.
		req.Header = acceptJSON
		resp, err = c.rt.RoundTrip(req)
	} else {
		req.Header.Set("Accept", "application/json")
		resp, err = c.hc.Do(req)
	}
	if err != nil {
		// *url.Error repeats the method and the full URL; keep the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	return resp, nil
}

// readBounded reads a whole body of at most limit bytes into buf's array
// when it is large enough (buf may be nil: a new one is made). A declared
// length over the limit fails before reading anything.
func readBounded(r io.Reader, declared, limit int64, buf []byte) ([]byte, error) {
	if declared > limit {
		return nil, fmt.Errorf("body of %d bytes exceeds the %d-byte limit", declared, limit)
	}
	if declared >= 0 {
		if int64(cap(buf)) < declared {
			buf = make([]byte, declared)
		}
		buf = buf[:declared]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("read body: %w", noEOF(err))
		}
		return buf, nil
	}
	// io.ReadAll's loop, into buf.
	if buf == nil {
		buf = make([]byte, 0, 512)
	}
	b, lr := buf[:0], io.LimitReader(r, limit+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("body exceeds the %d-byte limit", limit)
	}
	return b, nil
}

// noEOF reports a body that ends early as unexpected: io.ReadFull says EOF
// when not a single byte came.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
