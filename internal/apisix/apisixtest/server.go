package apisixtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
)

// Node statuses as lua-resty-healthcheck reports them. Any other string may
// be set too; APISIX clients must treat it as not healthy.
const (
	Healthy         = "healthy"
	MostlyHealthy   = "mostly_healthy" // still gets traffic
	Unhealthy       = "unhealthy"
	MostlyUnhealthy = "mostly_unhealthy" // still gets none
)

// Node is one target of a resource's health checker.
type Node struct {
	IP     string
	Port   int
	Status string
	// Purging lists the node with purge_time (3.3+ format only): it was
	// dropped from the upstream and waits for the checker's delayed clear.
	Purging bool
}

// Format is the body format a resource is served in.
type Format int

const (
	// V3 is the APISIX 3.3+ format: {"name","type","nodes":[{ip,port,
	// hostname,status,counter}]}.
	V3 Format = iota
	// V2 is the APISIX 2.x–3.2 format: {"name":"upstream#…","src_type",
	// "src_id","nodes","healthy_nodes"}, with "/" escaped as "\/".
	V2
)

// String is "v3" or "v2".
func (f Format) String() string {
	switch f {
	case V3:
		return "v3"
	case V2:
		return "v2"
	}
	return fmt.Sprintf("format(%d)", int(f))
}

// SlowInterval is the pause between the bytes of a Slow body.
const SlowInterval = 50 * time.Millisecond

// OversizeBytes is the least length of an Oversize body: above the
// client's default 4 MiB limit.
const OversizeBytes = 5 << 20

// Fault makes the server misbehave, for one resource or for every request.
type Fault int

const (
	NoFault      Fault = iota
	Refuse             // close the connection without a reply (Go's client retries that once on a reused connection: 2 requests)
	Stall              // block until the request's context ends, Release or Close; after Release, answer normally
	Status500          // nginx's HTML 500 page
	Status502          // nginx's HTML 502 page, as a proxy in front would send
	Status503          // nginx's HTML 503 page
	Garbage            // 200, application/json, bytes that are not JSON
	HTMLNotFound       // nginx's HTML 404 page (what an unknown path gets)
	Truncated          // the normal answer, cut in half: Content-Length promises more and the connection closes
	Slow               // the normal answer, one byte every SlowInterval
	Oversize           // 200, a valid JSON body of at least OversizeBytes, chunked
)

var faultNames = [...]string{
	NoFault: "none", Refuse: "refuse", Stall: "stall", Status500: "500", Status502: "502",
	Status503: "503", Garbage: "garbage", HTMLNotFound: "html404", Truncated: "truncated",
	Slow: "slow", Oversize: "oversize",
}

// String is the name ParseFault reads.
func (f Fault) String() string {
	if f >= 0 && int(f) < len(faultNames) {
		return faultNames[f]
	}
	return fmt.Sprintf("fault(%d)", int(f))
}

// ParseFault reads a fault name as String writes it ("none", "refuse",
// "stall", "500", "502", "503", "garbage", "html404", "truncated", "slow",
// "oversize"), for command lines of fake servers.
func ParseFault(s string) (Fault, error) {
	for f, name := range faultNames {
		if s == name {
			return Fault(f), nil
		}
	}
	return NoFault, fmt.Errorf("unknown fault %q (allowed: %s)", s, strings.Join(faultNames[:], ", "))
}

// resource is what the server knows about one APISIX resource.
type resource struct {
	// targets are the nodes the control API reports, as the health
	// checker keeps them in shared memory; none: no checker has run.
	targets []target
	// config is the nodes the resource is configured with, which the
	// data path proxies to and a new checker starts from; version counts
	// its changes.
	config  []Node
	version int
	format  Format
	checker bool // false: the resource exists but has no health checks
}

// Server is a fake APISIX control API. Create it with New or NewWith.
type Server struct {
	mu                       sync.Mutex
	res                      map[apisix.Ref]*resource
	routes                   map[string]Route
	backends                 map[string]Backend // "ip:port" → state; absent: Alive
	clock                    Clock
	checks                   Checks // with defaults filled in
	timed                    bool   // Options.Checks was set: Tick probes
	standalone               bool
	workers                  []*worker // fixed at NewWith; their maps are under mu
	probing                  int       // the worker holding the probe lock, from 1; 0: none yet
	pending                  []pendingReport
	fresh                    int // FreshNodes calls
	transitions              []Transition
	perType                  map[string]int // resources of each type
	withChecks               int            // resources with checks
	nextManager, nextCleanup time.Time
	cold                     bool // a cold restart is under way
	perRequest               bool
	nextWorker               atomic.Uint64 // round-robin of connections (or requests)
	cost                     Cost
	costNow                  func() time.Time  // real time; tests replace it
	wait                     func(t time.Time) // waits until t in real time; tests replace it

	acctMu      sync.Mutex
	acctSince   time.Time
	dataLatency latencyLog // since acctSince

	lnMu       sync.Mutex // guards what follows
	listeners  []*restartable
	restarting bool
	upAt       time.Time
	restartErr error

	faults    map[apisix.Ref]Fault
	global    Fault
	listFault Fault // for GET /v1/healthcheck only
	requests  int
	lists     int // requests for the list
	perRef    map[apisix.Ref]int
	// movingReads counts, per resource, the one-resource answers that
	// showed a node mostly_healthy or mostly_unhealthy.
	movingReads map[apisix.Ref]int
	arrived     chan struct{} // closed and replaced by every request, for WaitRequests
	release     chan struct{} // closed and replaced by Release
	held        chan struct{} // closed when a reply is first held back, for Stalled
	holding     bool          // held is closed
	done        chan struct{} // closed by Close
	closed      bool
	ts          []*httptest.Server
	chunked     bool // SetChunked
	keepalive   int  // SetKeepaliveRequests; 0: no limit
}

// connKey holds a connection's connState in a request's context, when
// the server's ConnContext is ConnContext.
type connKey struct{}

// connState is what the server knows of one connection.
type connState struct {
	answers int // under Server.mu
	worker  int // the worker serving it, from 0
}

// ConnContext gives each connection its worker and counts its answers,
// which SetKeepaliveRequests needs: set it as the http.Server's
// ConnContext (of the API's and the data path's servers). Start and
// StartData do. Without it every request gets the next worker.
func (s *Server) ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &connState{worker: s.pickWorker()})
}

// pickWorker is the next worker, round-robin.
func (s *Server) pickWorker() int {
	return int((s.nextWorker.Add(1) - 1) % uint64(len(s.workers)))
}

// workerOf is the worker serving r.
func (s *Server) workerOf(r *http.Request) int {
	if c, ok := r.Context().Value(connKey{}).(*connState); ok && !s.perRequest {
		return c.worker
	}
	return s.pickWorker()
}

// SetChunked makes every answer but the faults' chunked, without a
// Content-Length, as APISIX sends them: nginx streams what Lua's
// core.response.exit writes (ngx.say) with chunked transfer coding on
// HTTP/1.1. Off by default, so that tests that count bytes see lengths.
func (s *Server) SetChunked(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunked = on
}

// SetKeepaliveRequests makes the server close a connection after n answers,
// saying "Connection: close" on the last, as nginx's keepalive_requests does
// (1000 by default in nginx and APISIX; nginx then ignores requests the
// client pipelined after it). 0, the default here, is no limit. It takes
// effect only with ConnContext installed (Start does).
func (s *Server) SetKeepaliveRequests(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keepalive = n
}

// New returns a server that knows no resources: every resource is
// "not found" until SetNodes, SetUpstream or NoChecker creates it. It has
// one worker, statuses change only when a test sets them, and requests
// cost nothing: NewWith(Options{}).
func New() *Server { return NewWith(Options{}) }

// NewWith returns a server with these options.
func NewWith(o Options) *Server {
	s := &Server{
		res:         map[apisix.Ref]*resource{},
		routes:      map[string]Route{},
		perType:     map[string]int{},
		backends:    map[string]Backend{},
		clock:       o.Clock,
		standalone:  o.Standalone,
		perRequest:  o.PerRequest,
		cost:        o.Cost,
		costNow:     time.Now,
		faults:      map[apisix.Ref]Fault{},
		perRef:      map[apisix.Ref]int{},
		movingReads: map[apisix.Ref]int{},
		arrived:     make(chan struct{}),
		release:     make(chan struct{}),
		held:        make(chan struct{}),
		done:        make(chan struct{}),
	}
	s.wait = func(t time.Time) { waitUntil(t, s.cost.SpinBelow) }
	if s.clock == nil {
		s.clock = realClock{}
	}
	if o.Checks != nil {
		s.checks, s.timed = o.Checks.withDefaults(), true
	} else {
		s.checks = DefaultChecks()
	}
	// APISIX's timers start with the workers.
	now := s.clock.Now()
	s.nextManager, s.nextCleanup = now.Add(s.checks.ManagerInterval), now.Add(s.checks.CleanupInterval)
	s.probing = s.checks.ProbingWorker
	for range max(o.Workers, 1) {
		s.workers = append(s.workers, newWorker())
	}
	if s.probing > len(s.workers) {
		s.probing = len(s.workers)
	}
	s.acctSince = s.costNow()
	return s
}

// Start serves s on a new loopback httptest.Server, on a listener that
// Restart can take down. Stop it with s.Close, which also frees stalled
// requests (httptest.Server.Close alone waits for them).
func (s *Server) Start() *httptest.Server { return s.start(s) }

func (s *Server) start(h http.Handler) *httptest.Server {
	ts := httptest.NewUnstartedServer(h)
	ln, err := s.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("apisixtest: listen: %v", err))
	}
	ts.Listener.Close()
	ts.Listener = ln
	ts.Config.ConnContext = s.ConnContext
	ts.Start()
	s.mu.Lock()
	s.ts = append(s.ts, ts)
	s.mu.Unlock()
	return ts
}

// Close frees every stalled or trickling request, now and later, and
// closes the httptest.Servers that Start and StartData made, if any. It is
// idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	ts := s.ts
	s.ts = nil
	if !s.closed {
		s.closed = true
		close(s.done)
	}
	s.mu.Unlock()
	for _, t := range ts {
		t.Close()
	}
}

// SetNodes creates or replaces the resource's checker with these nodes and
// statuses, in this order (SetStatus counts from 0), in every worker at
// once. No nodes is a checker that has not run yet: APISIX then sends
// "nodes": {}. A node's counters are those its status has when reached by
// TCP checks (mostly_healthy: tcp_failure 1; unhealthy: tcp_failure 2;
// mostly_unhealthy: success 1). The nodes are also the resource's
// configuration (see SetUpstream). The format is kept if the resource
// existed, else V3.
func (s *Server) SetNodes(ref apisix.Ref, nodes ...Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.resource(ref)
	now := s.clock.Now()
	old := r.targets
	r.targets = make([]target, len(nodes))
	r.config = make([]Node, len(nodes))
	for i, n := range nodes {
		r.targets[i] = target{Node: Node{IP: n.IP, Port: n.Port, Status: n.Status}, ctr: counterFor(n.Status)}
		if n.Purging {
			r.targets[i].purgeAt = now.Add(s.checks.PurgeDelay)
		}
		r.config[i] = Node{IP: n.IP, Port: n.Port}
		from := ""
		if j := slices.IndexFunc(old, func(t target) bool { return t.IP == n.IP && t.Port == n.Port }); j >= 0 {
			from = old[j].Status
		}
		if from != n.Status {
			s.record(now, ref, n.IP, n.Port, from, n.Status)
		}
	}
	for _, t := range old {
		if !slices.ContainsFunc(nodes, func(n Node) bool { return t.IP == n.IP && t.Port == n.Port }) {
			s.record(now, ref, t.IP, t.Port, t.Status, "")
		}
	}
	s.setChecks(r, true)
	r.version++
	for _, w := range s.workers {
		w.checkers[ref] = &workerChecker{version: r.version, lastHealthy: now, lastUnhealthy: now}
		delete(w.waiting, ref)
	}
	if s.probing == 0 && len(nodes) > 0 {
		s.probing = 1
	}
}

// SetStatus sets the status of the resource's i-th node.
func (s *Server) SetStatus(ref apisix.Ref, i int, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.checker(ref)
	if err != nil {
		return err
	}
	if i < 0 || i >= len(r.targets) {
		return fmt.Errorf("apisixtest: %q has %d nodes, no node %d", ref.String(), len(r.targets), i)
	}
	s.force(ref, &r.targets[i], status)
	return nil
}

// SetAllStatus sets the status of every node of the resource.
func (s *Server) SetAllStatus(ref apisix.Ref, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.checker(ref)
	if err != nil {
		return err
	}
	for i := range r.targets {
		s.force(ref, &r.targets[i], status)
	}
	return nil
}

// dropAll removes every node from ref's checker. It runs under s.mu.
func (s *Server) dropAll(ref apisix.Ref, r *resource) {
	now := s.clock.Now()
	for _, t := range r.targets {
		s.record(now, ref, t.IP, t.Port, t.Status, "")
	}
	r.targets = nil
}

// force sets a node's status as a test does. It runs under s.mu.
func (s *Server) force(ref apisix.Ref, t *target, status string) {
	if t.Status != status {
		s.record(s.clock.Now(), ref, t.IP, t.Port, t.Status, status)
	}
	t.Status, t.ctr = status, counterFor(status)
}

// SetFormat sets the format the resource is served in.
func (s *Server) SetFormat(ref apisix.Ref, f Format) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res[ref]
	if r == nil {
		return fmt.Errorf("apisixtest: no resource %q", ref.String())
	}
	r.format = f
	return nil
}

// Remove deletes the resource: it is then "not found" (HTTP 404
// "upstreams[api] not found"). Removing a missing resource does nothing.
func (s *Server) Remove(ref apisix.Ref) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.res[ref]; r != nil {
		s.dropAll(ref, r)
		s.setChecks(r, false)
		s.perType[ref.Type]--
		delete(s.res, ref)
	}
}

// NoChecker makes the resource exist without a health checker (HTTP 404
// "no checker for upstreams[api]"), creating it if needed: its checks were
// removed from its configuration. Its nodes are dropped; SetNodes or
// SetUpstream brings the checker back.
func (s *Server) NoChecker(ref apisix.Ref) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.resource(ref)
	s.dropAll(ref, r)
	r.config = nil
	s.setChecks(r, false)
	r.version++
}

// SetFault sets the fault of requests for one resource (NoFault clears it).
// The resource need not exist. A global fault, when set, wins.
func (s *Server) SetFault(ref apisix.Ref, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f == NoFault {
		delete(s.faults, ref)
		return
	}
	s.faults[ref] = f
}

// SetGlobalFault sets a fault for every request, the list and unknown paths
// included (NoFault clears it).
func (s *Server) SetGlobalFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.global = f
}

// SetListFault sets the fault of the list, GET /v1/healthcheck, alone
// (NoFault clears it); requests for one resource are not affected. A global
// fault, when set, wins.
func (s *Server) SetListFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listFault = f
}

// Release lets every request stalled so far answer normally. Requests that
// arrive later stall again while the Stall fault stays set.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.release)
	s.release = make(chan struct{})
}

// Stalled returns a channel that is closed once the server first holds a
// reply back: a Stall request blocks, or a Slow one has sent its headers
// and trickles its body. The client then waits for what will not come (in
// time), so a test can end its context there instead of waiting out a
// real deadline.
func (s *Server) Stalled() <-chan struct{} { return s.held }

// holdBack closes held, once.
func (s *Server) holdBack() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.holding {
		s.holding = true
		close(s.held)
	}
}

// Requests is the number of requests received, whatever their path or fault.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// WaitRequests blocks until the server has received at least n requests
// (a stalled request counts before it blocks) or ctx ends, whichever comes
// first; then it returns ctx's error, with the count so far.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, arrived := s.requests, s.arrived
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return fmt.Errorf("apisixtest: %d requests, want %d: %w", got, n, ctx.Err())
		}
	}
}

// ListRequests is the number of requests received for the list,
// GET /v1/healthcheck.
func (s *Server) ListRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// RequestsFor is the number of requests received for one resource's checker.
func (s *Server) RequestsFor(ref apisix.Ref) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.perRef[ref]
}

// resource returns ref's resource, creating it if needed. It runs under
// s.mu.
func (s *Server) resource(ref apisix.Ref) *resource {
	r := s.res[ref]
	if r == nil {
		r = &resource{}
		s.res[ref] = r
		s.perType[ref.Type]++
	}
	return r
}

// setChecks sets whether r has health checks, keeping count. It runs
// under s.mu.
func (s *Server) setChecks(r *resource, on bool) {
	switch {
	case on && !r.checker:
		s.withChecks++
	case !on && r.checker:
		s.withChecks--
	}
	r.checker = on
}

func (s *Server) checker(ref apisix.Ref) (*resource, error) {
	r := s.res[ref]
	if r == nil || !r.checker {
		return nil, fmt.Errorf("apisixtest: no checker for %q", ref.String())
	}
	return r, nil
}

// answer is a complete response, built under the lock and written after.
type answer struct {
	status      int
	contentType string
	body        []byte
}

// ServeHTTP answers like APISIX's control API does for the health-check
// paths, and with nginx's HTML 404 for anything else.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fault, release, done, chunked, closeConn := s.arrive(r)
	if closeConn {
		// net/http's server then closes the connection after this answer
		// and reads no request pipelined after it, as nginx.
		w.Header().Set("Connection", "close")
	}

	if fault == Stall {
		s.holdBack()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		case <-done:
			// Returning would send an empty 200; a closed server
			// answers nothing.
			refuse(w)
			return
		}
	}
	var a answer
	switch fault {
	case NoFault, Stall, Truncated, Slow:
		// Built after a stall, so a released request reports the state
		// of now, by the serving loop of the connection's worker (a
		// stall stands for something in front of APISIX: the worker
		// sees the request when it is released).
		a = s.serve(r)
		if fault != Truncated {
			s.noteMoving(r, a)
		}
	}
	switch fault {
	case NoFault, Stall:
	case Refuse:
		refuse(w)
		return
	case Status500:
		a = nginxPage(http.StatusInternalServerError)
	case Status502:
		a = nginxPage(http.StatusBadGateway)
	case Status503:
		a = nginxPage(http.StatusServiceUnavailable)
	case Garbage:
		a = answer{http.StatusOK, "application/json", []byte("\x00\xff<<not json>>\n")}
	case HTMLNotFound:
		a = nginxPage(http.StatusNotFound)
	case Truncated:
		w.Header().Set("Content-Length", fmt.Sprint(len(a.body)))
		a.body = a.body[:len(a.body)/2]
	case Slow:
		trickle(w, r, a, done, s.holdBack)
		return
	case Oversize:
		oversize(w, r)
		return
	}
	w.Header().Set("Content-Type", a.contentType)
	if chunked && fault != Truncated {
		writeChunked(w, a)
		return
	}
	if w.Header().Get("Content-Length") == "" {
		w.Header().Set("Content-Length", fmt.Sprint(len(a.body)))
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// serve builds the fault-free answer to r on its worker's serving loop: it
// waits for the loop, is built, and leaves when its cost is spent.
func (s *Server) serve(r *http.Request) answer {
	wk := s.workerOf(r)
	s.mu.Lock()
	kind, cost := s.costOf(r)
	s.mu.Unlock()
	_, start, finish := s.workers[wk].loop.reserve(kind, s.costNow, cost)
	s.wait(start)
	s.mu.Lock()
	a := s.answer(r, wk)
	s.mu.Unlock()
	s.wait(finish)
	return a
}

// costOf tells what kind of request r is and what it costs its worker. It
// runs under s.mu.
func (s *Server) costOf(r *http.Request) (kind int, cost time.Duration) {
	if r.Method != http.MethodGet {
		return kindOther, 0
	}
	if r.URL.Path == "/v1/healthcheck" {
		return kindList, s.cost.List(s.withChecks)
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/healthcheck/")
	if !ok {
		return kindOther, 0
	}
	typ, _, _ := strings.Cut(rest, "/")
	return kindGet, s.cost.Get(s.perType[typ])
}

// arrive counts r and returns the fault it meets and what answering it
// takes: the channels a stall waits on, whether to answer chunked, and
// whether this is the last answer its connection may carry.
func (s *Server) arrive(r *http.Request) (fault Fault, release, done chan struct{}, chunked, closeConn bool) {
	ref, isResource := resourceOf(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	close(s.arrived)
	s.arrived = make(chan struct{})
	fault = s.global
	switch {
	case isResource:
		s.perRef[ref]++
		if fault == NoFault {
			fault = s.faults[ref]
		}
	case r.URL.Path == "/v1/healthcheck":
		s.lists++
		if fault == NoFault {
			fault = s.listFault
		}
	}
	return fault, s.release, s.done, s.chunked, s.lastOnConn(r)
}

// lastOnConn counts an answer of r's connection and reports whether it is
// the last SetKeepaliveRequests allows. It runs under s.mu.
func (s *Server) lastOnConn(r *http.Request) bool {
	c, ok := r.Context().Value(connKey{}).(*connState)
	if !ok || s.keepalive <= 0 {
		return false
	}
	c.answers++
	return c.answers >= s.keepalive
}

// writeChunked sends a's body in two chunks: net/http's server uses the
// chunked coding for a body it has flushed before knowing its length.
func writeChunked(w http.ResponseWriter, a answer) {
	w.WriteHeader(a.status)
	half := len(a.body) / 2
	_, _ = w.Write(a.body[:half])
	_ = http.NewResponseController(w).Flush()
	_, _ = w.Write(a.body[half:])
}

// resourceOf tells whether the request addresses one resource's checker.
func resourceOf(r *http.Request) (apisix.Ref, bool) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/healthcheck/")
	if !ok {
		return apisix.Ref{}, false
	}
	typ, id, _ := strings.Cut(rest, "/")
	id, _, _ = strings.Cut(id, "/")
	if id == "" {
		return apisix.Ref{}, false
	}
	return apisix.Ref{Type: typ, ID: id}, true
}

// answer builds the fault-free response, as worker wk sees the state. It
// runs under s.mu.
func (s *Server) answer(r *http.Request, wk int) answer {
	if r.Method != http.MethodGet {
		return nginxPage(http.StatusNotFound)
	}
	if r.URL.Path == "/v1/healthcheck" {
		if acceptsHTML(r) {
			return s.htmlPage(s.listed(wk))
		}
		return s.list(wk)
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/healthcheck/")
	if !ok {
		return nginxPage(http.StatusNotFound)
	}
	// As APISIX's get_health_checker: segments after the id are ignored,
	// and a missing id is checked before the type.
	segs := strings.Split(rest, "/")
	if len(segs) < 2 || segs[1] == "" {
		return errorAnswer(http.StatusNotFound, "missing src id for src type "+segs[0])
	}
	ref := apisix.Ref{Type: segs[0], ID: segs[1]}
	if !slices.Contains(apisix.Types, ref.Type) {
		return errorAnswer(http.StatusBadRequest, "invalid src type "+ref.Type)
	}
	res := s.res[ref]
	switch {
	case res == nil:
		return errorAnswer(http.StatusNotFound, ref.Type+"["+ref.ID+"] not found")
	case !res.checker, !s.sees(wk, ref, res):
		return errorAnswer(http.StatusNotFound, "no checker for "+ref.Type+"["+ref.ID+"]")
	case acceptsHTML(r):
		return s.htmlPage([]apisix.Ref{ref})
	}
	return jsonAnswer(res.format, s.entry(ref, res))
}

// noteMoving counts a, the answer to r that its reader gets whole, in
// MovingReads when it is a one-resource answer that shows a node between
// states.
func (s *Server) noteMoving(r *http.Request, a answer) {
	ref, ok := resourceOf(r)
	if !ok || a.status != http.StatusOK || a.contentType != "application/json" || !bytes.Contains(a.body, []byte(`"mostly_`)) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.movingReads[ref]++
}

// MovingReads is the number of one-resource answers for ref that showed a
// node between states (mostly_healthy or mostly_unhealthy): a client read
// the resource inside the one-check window before a node's status flips.
func (s *Server) MovingReads(ref apisix.Ref) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.movingReads[ref]
}

// sees tells whether worker wk reports ref's checker. APISIX 3.3+ reads
// every checker from shared memory, so any worker reports any checker; up
// to 3.2 (the V2 format) a worker reported only the checkers it had
// itself, which only Checks.Lazy makes differ between workers.
func (s *Server) sees(wk int, ref apisix.Ref, res *resource) bool {
	return res.format != V2 || !s.checks.Lazy || s.workers[wk].checkers[ref] != nil
}

// list is GET /v1/healthcheck: every resource with a checker, routes first,
// then stream routes, services and upstreams, as APISIX orders them. An
// empty list is {}, as cjson encodes an empty Lua table.
func (s *Server) list(wk int) answer {
	refs := s.listed(wk)
	if len(refs) == 0 {
		return answer{http.StatusOK, "application/json", []byte("{}\n")}
	}
	// Entries are joined by hand: marshalling them as []json.RawMessage
	// would compact the whole body once more.
	body := []byte{'['}
	for i, ref := range refs {
		res := s.res[ref]
		b, err := json.Marshal(s.entry(ref, res))
		if err != nil {
			panic(err) // only strings, ints and floats: cannot fail
		}
		if res.format == V2 {
			b = escapeSlashes(b)
		}
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, b...)
	}
	return answer{http.StatusOK, "application/json", append(body, "]\n"...)}
}

// listed is the resources the list shows to worker wk, in its order. It
// runs under s.mu.
func (s *Server) listed(wk int) []apisix.Ref {
	refs := make([]apisix.Ref, 0, len(s.res))
	for ref, res := range s.res {
		if res.checker && s.sees(wk, ref, res) {
			refs = append(refs, ref)
		}
	}
	order := map[string]int{"routes": 0, "stream_routes": 1, "services": 2, "upstreams": 3}
	slices.SortFunc(refs, func(a, b apisix.Ref) int {
		if d := order[a.Type] - order[b.Type]; d != 0 {
			return d
		}
		return strings.Compare(a.ID, b.ID)
	})
	return refs
}

// JSON shapes. Field sets follow testdata/README.md; encoding/json writes
// them in struct order, which is alphabetical like the fixtures.
type (
	v3Entry struct {
		Name  string `json:"name"`
		Nodes any    `json:"nodes"` // []v3Node, or emptyTable
		Type  string `json:"type"`
	}
	v3Node struct {
		Counter   counter  `json:"counter"`
		Hostname  string   `json:"hostname"`
		IP        string   `json:"ip"`
		Port      int      `json:"port"`
		PurgeTime *float64 `json:"purge_time,omitempty"`
		Status    string   `json:"status"`
	}
	counter struct {
		HTTPFailure    int `json:"http_failure"`
		Success        int `json:"success"`
		TCPFailure     int `json:"tcp_failure"`
		TimeoutFailure int `json:"timeout_failure"`
	}
	v2Entry struct {
		HealthyNodes any    `json:"healthy_nodes"` // []v2Node, or emptyTable
		Name         string `json:"name"`
		Nodes        any    `json:"nodes"`
		SrcID        string `json:"src_id"`
		SrcType      string `json:"src_type"`
	}
	v2Node struct {
		Host     string `json:"host"`
		Port     int    `json:"port"`
		Priority int    `json:"priority"`
		Weight   int    `json:"weight"`
	}
	// emptyTable encodes as {}: cjson's encoding of an empty Lua table,
	// which every released APISIX sends for an empty list.
	emptyTable struct{}
)

// name is the resource's name in a body: its configuration key.
func (s *Server) name(ref apisix.Ref) string {
	if s.standalone {
		return "/" + ref.Type + "/" + ref.ID
	}
	return "/apisix/" + ref.Type + "/" + ref.ID
}

// checkType is the "type" of ref's checker: its active checks' type.
func checkType(ref apisix.Ref) string {
	if ref.Type == "stream_routes" {
		return "tcp"
	}
	return "http"
}

// entry is the resource's body as a value to marshal. It runs under s.mu.
func (s *Server) entry(ref apisix.Ref, res *resource) any {
	name := s.name(ref)
	if res.format == V2 {
		var nodes, healthy []v2Node
		for _, n := range res.targets {
			v := v2Node{Host: n.IP, Port: n.Port, Weight: 1}
			nodes = append(nodes, v)
			if n.Status == Healthy || n.Status == MostlyHealthy {
				healthy = append(healthy, v)
			}
		}
		return v2Entry{HealthyNodes: listOrTable(healthy), Name: "upstream#" + name,
			Nodes: listOrTable(nodes), SrcID: ref.ID, SrcType: ref.Type}
	}
	typ := checkType(ref)
	nodes := make([]v3Node, len(res.targets))
	for i, n := range res.targets {
		nodes[i] = v3Node{Counter: n.ctr, Hostname: n.IP, IP: n.IP, Port: n.Port, Status: n.Status}
		if !n.purgeAt.IsZero() {
			// Epoch seconds as a float, when the delayed clear will drop it.
			t := float64(n.purgeAt.UnixMilli()) / 1000
			nodes[i].PurgeTime = &t
		}
	}
	return v3Entry{Name: name, Nodes: listOrTable(nodes), Type: typ}
}

// counterFor gives the counters lua-resty-healthcheck shows with a status
// reached by TCP checks: failures count up to the threshold (2) while
// healthy, successes while unhealthy, and a change of state resets them.
func counterFor(status string) counter {
	switch status {
	case MostlyHealthy:
		return counter{TCPFailure: 1}
	case Unhealthy:
		return counter{TCPFailure: 2}
	case MostlyUnhealthy:
		return counter{Success: 1}
	}
	return counter{}
}

func listOrTable[T any](l []T) any {
	if len(l) == 0 {
		return emptyTable{}
	}
	return l
}

func jsonAnswer(f Format, v any) answer {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only strings, ints and floats: cannot fail
	}
	if f == V2 {
		b = escapeSlashes(b)
	}
	// core.response.exit ends a JSON body with a newline.
	return answer{http.StatusOK, "application/json", append(b, '\n')}
}

// escapeSlashes writes "/" as "\/", as cjson does up to APISIX 3.1. In JSON
// text a "/" can only occur inside a string, where "\/" means the same.
func escapeSlashes(b []byte) []byte { return bytes.ReplaceAll(b, []byte("/"), []byte(`\/`)) }

func errorAnswer(status int, msg string) answer {
	a := jsonAnswer(V3, map[string]string{"error_msg": msg})
	a.status = status
	return a
}

func acceptsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// htmlPage is the page APISIX 3.3+ renders for a browser (Accept:
// text/html), byte for byte: a table row per node of these resources,
// red for a node that gets no traffic. It runs under s.mu.
func (s *Server) htmlPage(refs []apisix.Ref) answer {
	var b strings.Builder
	b.WriteString(`<html xmlns="http://www.w3.org/1999/xhtml">
<head>
  <title>APISIX upstream check status</title>
</head>
<body>
<h1>APISIX upstream check status</h1>
<table style="background-color:white" cellspacing="0" cellpadding="3" border="1">
  <tr bgcolor="#C0C0C0">
    <th>Index</th>
    <th>Upstream</th>
    <th>Check type</th>
    <th>Host</th>
    <th>Status</th>
    <th>Success counts</th>
    <th>TCP Failures</th>
    <th>HTTP Failures</th>
    <th>TIMEOUT Failures</th>
  </tr>
`)
	i := 0
	for _, ref := range refs {
		for _, t := range s.res[ref].targets {
			i++
			if t.Status == Healthy || t.Status == MostlyHealthy {
				b.WriteString("  <tr>\n")
			} else {
				b.WriteString("  <tr bgcolor=\"#FF0000\">\n")
			}
			for _, cell := range []string{fmt.Sprint(i), html.EscapeString(s.name(ref)), checkType(ref),
				html.EscapeString(addrKey(t.IP, t.Port)), html.EscapeString(t.Status), fmt.Sprint(t.ctr.Success),
				fmt.Sprint(t.ctr.TCPFailure), fmt.Sprint(t.ctr.HTTPFailure), fmt.Sprint(t.ctr.TimeoutFailure)} {
				b.WriteString("    <td>" + cell + "</td>\n")
			}
			b.WriteString("  </tr>\n")
		}
	}
	b.WriteString("</table>\n</body>\n</html>\n")
	return answer{http.StatusOK, "text/html", []byte(b.String())}
}

// nginxPage is nginx's built-in error page, as openresty sends it.
func nginxPage(code int) answer {
	title := fmt.Sprintf("%d %s", code, http.StatusText(code))
	body := "<html>\r\n<head><title>" + title + "</title></head>\r\n<body>\r\n<center><h1>" + title +
		"</h1></center>\r\n<hr><center>openresty</center>\r\n</body>\r\n</html>\r\n"
	return answer{code, "text/html", []byte(body)}
}

// refuse closes the connection without a reply.
func refuse(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	// Not hijackable (HTTP/2): aborting the handler resets the stream.
	panic(http.ErrAbortHandler)
}

// trickle sends a's body one byte at a time, until done or the client goes
// away. It calls held once the headers are sent.
func trickle(w http.ResponseWriter, r *http.Request, a answer, done <-chan struct{}, held func()) {
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Content-Length", fmt.Sprint(len(a.body)))
	w.WriteHeader(a.status)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	held()
	t := time.NewTicker(SlowInterval)
	defer t.Stop()
	for i := range a.body {
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-done:
			return
		}
		if _, err := w.Write(a.body[i : i+1]); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// oversize streams a valid 3.3+ body of at least OversizeBytes without a
// Content-Length, so a client finds out only by reading.
func oversize(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	head := `{"name":"/apisix/upstreams/oversize","type":"http","nodes":[`
	node := `{"counter":{"http_failure":0,"success":0,"tcp_failure":0,"timeout_failure":0},"hostname":"10.0.0.1","ip":"10.0.0.1","port":80,"status":"healthy"}`
	chunk := []byte(strings.Repeat(node+",", 64))
	n, _ := w.Write([]byte(head))
	for n < OversizeBytes {
		if r.Context().Err() != nil {
			return
		}
		m, err := w.Write(chunk)
		if err != nil {
			return
		}
		n += m
	}
	_, _ = w.Write([]byte(node + "]}"))
}
