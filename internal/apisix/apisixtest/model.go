package apisixtest

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
)

// Clock tells the fake what time it is. Everything that happens over time
// (active checks, lazy checker creation, the delayed purge of dropped
// nodes, the end of a restart) happens in Tick, at the clock's Now.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that moves only when told to, for unit tests.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock returns a clock that reads t until moved.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now is the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *ManualClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TickInterval is how often Run calls Tick: lua-resty-healthcheck's own
// timer period (CHECK_INTERVAL, 0.1 s), at which it looks for checks due.
const TickInterval = 100 * time.Millisecond

// Options configure a Server built by NewWith. The zero value is New's
// server: one worker, statuses that change only when a test sets them,
// and no cost.
type Options struct {
	// Clock drives Tick; nil is the real time.
	Clock Clock
	// Workers is the number of nginx workers (0 means 1). Each has its own
	// checkers and its own serving loop; a connection is served by one
	// worker, chosen round-robin as it is accepted (as nginx hands a
	// connection to one worker for its life).
	Workers int
	// PerRequest chooses a worker round-robin for every request instead
	// of every connection.
	PerRequest bool
	// Checks, when set, runs APISIX's active health checks over time:
	// nodes move through healthy → mostly_healthy → unhealthy and back as
	// Tick probes the backends that SetBackend makes dead or alive.
	Checks *Checks
	// Cost makes every request occupy its worker's serving loop as long as
	// the same request costs an APISIX worker (see DefaultCost). The zero
	// value costs nothing.
	Cost Cost
	// Standalone names resources as APISIX's standalone (yaml) mode does,
	// "/upstreams/1", instead of "/apisix/upstreams/1" (etcd mode).
	Standalone bool
}

// Checks are an upstream's active health checks and APISIX's machinery
// around them. Zero fields take APISIX's defaults (DefaultChecks).
type Checks struct {
	// HealthyInterval and UnhealthyInterval are how often a healthy (or
	// mostly_healthy) and an unhealthy (or mostly_unhealthy) node is
	// probed, counted from the checker's creation (1 s each).
	HealthyInterval, UnhealthyInterval time.Duration
	// Successes is the number of successful probes that make a node
	// healthy (2); TCPFailures, HTTPFailures and Timeouts the failed
	// probes of each kind that make it unhealthy (2, 5, 3). Fewer than
	// that move it to mostly_unhealthy or mostly_healthy.
	Successes, TCPFailures, HTTPFailures, Timeouts int
	// Timeout is how long a probe of a Hang backend takes to fail (1 s).
	Timeout time.Duration
	// Lazy creates a worker's checker only when a request for a route of
	// the resource reaches that worker through the data path (and the
	// worker's next checker-manager run, ManagerInterval, creates it), as
	// APISIX 3.14+ does. Until then the control API shows "nodes": {}.
	// Without Lazy every worker has every checker as soon as the resource
	// is configured.
	Lazy bool
	// ProbingWorker is the worker (counted from 1; beyond Workers, the
	// last) that holds the shared lock and runs every active check, for
	// the checkers it has. 0: the first worker that creates a checker
	// takes the lock, as in APISIX.
	ProbingWorker int
	// ManagerInterval is the period of APISIX's checker-manager timer,
	// which creates requested checkers and retires those of changed or
	// deleted resources (1 s).
	ManagerInterval time.Duration
	// PurgeDelay is how long a retired checker's nodes stay listed with a
	// purge_time (10 s, APISIX 3.14+), and CleanupInterval the period of
	// the timer that drops them once it has passed (2.5 s).
	PurgeDelay, CleanupInterval time.Duration
}

// DefaultChecks are APISIX 3.18's defaults for checks.active and its
// checker machinery.
func DefaultChecks() Checks {
	return Checks{
		HealthyInterval: time.Second, UnhealthyInterval: time.Second,
		Successes: 2, TCPFailures: 2, HTTPFailures: 5, Timeouts: 3,
		Timeout:         time.Second,
		ManagerInterval: time.Second,
		PurgeDelay:      10 * time.Second, CleanupInterval: 2500 * time.Millisecond,
	}
}

// withDefaults fills zero fields from DefaultChecks.
func (c Checks) withDefaults() Checks {
	d := DefaultChecks()
	setDur := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	setInt := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	setDur(&c.HealthyInterval, d.HealthyInterval)
	setDur(&c.UnhealthyInterval, d.UnhealthyInterval)
	setDur(&c.Timeout, d.Timeout)
	setDur(&c.ManagerInterval, d.ManagerInterval)
	setDur(&c.PurgeDelay, d.PurgeDelay)
	setDur(&c.CleanupInterval, d.CleanupInterval)
	setInt(&c.Successes, d.Successes)
	setInt(&c.TCPFailures, d.TCPFailures)
	setInt(&c.HTTPFailures, d.HTTPFailures)
	setInt(&c.Timeouts, d.Timeouts)
	return c
}

// Backend is what a node's server does when probed or proxied to.
type Backend int

const (
	Alive     Backend = iota // answers 200
	Dead                     // refuses connections: a TCP failure
	HTTPError                // answers 500: an HTTP failure
	Hang                     // accepts and never answers: a timeout
)

var backendNames = [...]string{Alive: "alive", Dead: "dead", HTTPError: "http500", Hang: "hang"}

// String is the name ParseBackend reads.
func (b Backend) String() string {
	if b >= 0 && int(b) < len(backendNames) {
		return backendNames[b]
	}
	return fmt.Sprintf("backend(%d)", int(b))
}

// ParseBackend reads "alive", "dead", "http500" or "hang".
func ParseBackend(s string) (Backend, error) {
	for b, name := range backendNames {
		if s == name {
			return Backend(b), nil
		}
	}
	return Alive, fmt.Errorf("unknown backend state %q (allowed: alive, dead, http500, hang)", s)
}

// target is one node as lua-resty-healthcheck keeps it in the shared
// memory that every worker reads: its status, counters and purge time.
type target struct {
	Node
	ctr     counter
	purgeAt time.Time // zero: not being purged
}

// workerChecker is one worker's checker object for a resource.
type workerChecker struct {
	version                    int // the resource's version it was built from
	lastHealthy, lastUnhealthy time.Time
}

// worker is one nginx worker: its checkers, the checkers requests asked
// it to create, and its serving loop.
type worker struct {
	checkers map[apisix.Ref]*workerChecker
	waiting  map[apisix.Ref]int // resource → version requested
	loop     loop
}

func newWorker() *worker {
	return &worker{checkers: map[apisix.Ref]*workerChecker{}, waiting: map[apisix.Ref]int{}}
}

// pendingReport is a probe's outcome that arrives later (a timeout).
type pendingReport struct {
	due  time.Time
	ref  apisix.Ref
	ip   string
	port int
	kind int
}

// Counter kinds, as lua-resty-healthcheck's CTR_* constants.
const (
	ctrSuccess = iota
	ctrHTTP
	ctrTCP
	ctrTimeout
)

func addrKey(ip string, port int) string { return fmt.Sprintf("%s:%d", ip, port) }

// SetBackend sets what the server at ip:port does when probed or proxied
// to (Alive until set). It applies to every node with that address, in
// every resource.
func (s *Server) SetBackend(ip string, port int, b Backend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b == Alive {
		delete(s.backends, addrKey(ip, port))
		return
	}
	s.backends[addrKey(ip, port)] = b
}

// SetBackends sets the backend of every node the resource is configured
// with.
func (s *Server) SetBackends(ref apisix.Ref, b Backend) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res[ref]
	if r == nil {
		return fmt.Errorf("apisixtest: no resource %q", ref.String())
	}
	for _, n := range r.config {
		if b == Alive {
			delete(s.backends, addrKey(n.IP, n.Port))
		} else {
			s.backends[addrKey(n.IP, n.Port)] = b
		}
	}
	return nil
}

func (s *Server) backend(ip string, port int) Backend { return s.backends[addrKey(ip, port)] }

// SetUpstream configures the resource with health checks and these nodes,
// as an APISIX configuration change does (Status and Purging are
// ignored). A new checker starts every node healthy with zero counters;
// with Checks.Lazy it exists only once a data-path request asked for it.
// Changing the nodes of a resource that has checkers retires them on the
// checker manager's next run: their nodes are listed with a purge_time,
// the new checker takes the nodes it keeps back (status and counters
// included) and the dropped ones disappear after the purge delay.
func (s *Server) SetUpstream(ref apisix.Ref, nodes ...Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.resource(ref)
	cfg := make([]Node, len(nodes))
	for i, n := range nodes {
		cfg[i] = Node{IP: n.IP, Port: n.Port}
	}
	if r.checker && slices.Equal(r.config, cfg) {
		return
	}
	r.config = cfg
	s.setChecks(r, true)
	r.version++
	if !s.checks.Lazy {
		now := s.clock.Now()
		for i, w := range s.workers {
			if w.checkers[ref] != nil {
				s.retire(w, ref, r, now)
			}
			s.create(i, ref, r, now)
		}
	}
}

// retire stops a worker's checker of ref, as APISIX does when the resource
// changed or went away: delayed_clear marks every node with a purge_time.
func (s *Server) retire(w *worker, ref apisix.Ref, r *resource, now time.Time) {
	delete(w.checkers, ref)
	if r == nil {
		return
	}
	for i := range r.targets {
		r.targets[i].purgeAt = now.Add(s.checks.PurgeDelay)
	}
}

// create builds worker i's checker of ref from the resource's current
// configuration: add_target for every node, which keeps a node already in
// shared memory (clearing its purge time) and adds a new one healthy.
func (s *Server) create(i int, ref apisix.Ref, r *resource, now time.Time) {
	for _, n := range r.config {
		j := slices.IndexFunc(r.targets, func(t target) bool { return t.IP == n.IP && t.Port == n.Port })
		if j >= 0 {
			r.targets[j].purgeAt = time.Time{}
			continue
		}
		r.targets = append(r.targets, target{Node: Node{IP: n.IP, Port: n.Port, Status: Healthy}})
		s.record(now, ref, n.IP, n.Port, "", Healthy)
	}
	s.workers[i].checkers[ref] = &workerChecker{version: r.version, lastHealthy: now, lastUnhealthy: now}
	if s.probing == 0 {
		s.probing = i + 1
	}
}

// request records that a data-path request for ref reached worker i: as
// APISIX's fetch_checker, it asks for a checker when the worker has none
// of the resource's current version.
func (s *Server) request(i int, ref apisix.Ref, r *resource) {
	if !r.checker || !s.checks.Lazy {
		return
	}
	w := s.workers[i]
	if c := w.checkers[ref]; c != nil && c.version == r.version {
		return
	}
	w.waiting[ref] = r.version
}

// Tick does what is due at the clock's time: a restart's end, the checker
// manager's run, the purge of dropped nodes, and (with Options.Checks) the
// active checks of the probing worker and the timeouts they are waiting
// for. Run calls it every TickInterval; tests with a ManualClock call it
// (or Advance) themselves. It is safe to call concurrently with requests.
func (s *Server) Tick() {
	now := s.clock.Now()
	if !s.tickListeners(now) {
		return // the workers are down
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.comeBack(now)
	if !now.Before(s.nextManager) {
		s.nextManager = now.Add(s.checks.ManagerInterval)
		for i := range s.workers {
			s.manage(i, now)
		}
	}
	if !now.Before(s.nextCleanup) {
		s.nextCleanup = now.Add(s.checks.CleanupInterval)
		s.purge(now)
	}
	if !s.timed {
		return
	}
	s.deliver(now)
	if s.probing > 0 {
		s.probe(s.probing-1, now)
	}
}

// manage is one run of worker i's checker manager: retire checkers whose
// resource changed or went away, then create the requested ones.
func (s *Server) manage(i int, now time.Time) {
	w := s.workers[i]
	for _, ref := range sortedRefs(w.checkers) {
		r := s.res[ref]
		if r == nil || !r.checker || r.version != w.checkers[ref].version {
			s.retire(w, ref, r, now)
		}
	}
	for _, ref := range sortedRefs(w.waiting) {
		v := w.waiting[ref]
		delete(w.waiting, ref)
		r := s.res[ref]
		if r == nil || !r.checker || r.version != v || w.checkers[ref] != nil {
			continue
		}
		s.create(i, ref, r, now)
	}
}

// purge drops the nodes whose purge time has passed.
func (s *Server) purge(now time.Time) {
	for _, ref := range sortedRefs(s.res) {
		r := s.res[ref]
		r.targets = slices.DeleteFunc(r.targets, func(t target) bool {
			if t.purgeAt.IsZero() || t.purgeAt.After(now) {
				return false
			}
			s.record(now, ref, t.IP, t.Port, t.Status, "")
			return true
		})
	}
}

// probe runs the active checks that are due in worker i's checkers: the
// healthy and mostly_healthy nodes every HealthyInterval, the others every
// UnhealthyInterval, each counted from the previous run.
func (s *Server) probe(i int, now time.Time) {
	w := s.workers[i]
	for _, ref := range sortedRefs(w.checkers) {
		c, r := w.checkers[ref], s.res[ref]
		if r == nil {
			continue
		}
		healthyDue := !now.Before(c.lastHealthy.Add(s.checks.HealthyInterval))
		unhealthyDue := !now.Before(c.lastUnhealthy.Add(s.checks.UnhealthyInterval))
		if healthyDue {
			c.lastHealthy = now
		}
		if unhealthyDue {
			c.lastUnhealthy = now
		}
		if !healthyDue && !unhealthyDue {
			continue
		}
		for j := range r.targets {
			t := &r.targets[j]
			up := t.Status == Healthy || t.Status == MostlyHealthy
			down := t.Status == Unhealthy || t.Status == MostlyUnhealthy
			if (up && healthyDue) || (down && unhealthyDue) {
				s.check(ref, t, now)
			}
		}
	}
}

// check probes one node and reports the outcome, now or, for a backend
// that hangs, when the probe's timeout ends.
func (s *Server) check(ref apisix.Ref, t *target, now time.Time) {
	switch s.backend(t.IP, t.Port) {
	case Alive:
		s.report(ref, t, ctrSuccess, now)
	case Dead:
		s.report(ref, t, ctrTCP, now)
	case HTTPError:
		s.report(ref, t, ctrHTTP, now)
	case Hang:
		s.pending = append(s.pending, pendingReport{now.Add(s.checks.Timeout), ref, t.IP, t.Port, ctrTimeout})
	}
}

// deliver reports the pending outcomes that are due.
func (s *Server) deliver(now time.Time) {
	s.pending = slices.DeleteFunc(s.pending, func(p pendingReport) bool {
		if p.due.After(now) {
			return false
		}
		if r := s.res[p.ref]; r != nil {
			for j := range r.targets {
				if r.targets[j].IP == p.ip && r.targets[j].Port == p.port {
					s.report(p.ref, &r.targets[j], p.kind, now)
				}
			}
		}
		return true
	})
}

// report counts one probe outcome as lua-resty-healthcheck's incr_counter
// does: a fully healthy node ignores successes and a fully unhealthy one
// failures; a success clears the failure counters and a failure the
// success counter; reaching the kind's threshold sets the status, and a
// first count against the status moves healthy to mostly_healthy or
// unhealthy to mostly_unhealthy. Counters then hold where they are until
// the status changes direction.
func (s *Server) report(ref apisix.Ref, t *target, kind int, now time.Time) {
	want, limit := Unhealthy, 0
	switch kind {
	case ctrSuccess:
		want, limit = Healthy, s.checks.Successes
	case ctrHTTP:
		limit = s.checks.HTTPFailures
	case ctrTCP:
		limit = s.checks.TCPFailures
	case ctrTimeout:
		limit = s.checks.Timeouts
	}
	if t.Status == want {
		return
	}
	c := &t.ctr
	var n int
	switch kind {
	case ctrSuccess:
		c.Success = min(c.Success+1, 255)
		c.HTTPFailure, c.TCPFailure, c.TimeoutFailure = 0, 0, 0
		n = c.Success
	default:
		c.Success = 0
		p := &c.TimeoutFailure
		switch kind {
		case ctrHTTP:
			p = &c.HTTPFailure
		case ctrTCP:
			p = &c.TCPFailure
		}
		*p = min(*p+1, 255)
		n = *p
	}
	from := t.Status
	switch {
	case n >= limit:
		t.Status = want
	case t.Status == Healthy && kind != ctrSuccess:
		t.Status = MostlyHealthy
	case t.Status == Unhealthy && kind == ctrSuccess:
		t.Status = MostlyUnhealthy
	}
	if t.Status != from {
		s.record(now, ref, t.IP, t.Port, from, t.Status)
	}
}

// Transition is a change of a node's status in the control API's view.
type Transition struct {
	Time time.Time  `json:"time"`
	Ref  apisix.Ref `json:"-"`
	// Resource is Ref as "type/id", for JSON.
	Resource string `json:"resource"`
	IP       string `json:"ip"`
	Port     int    `json:"port"`
	// From is "" for a node added to the checker, To "" for one purged.
	From string `json:"from"`
	To   string `json:"to"`
}

// MaxTransitions bounds the transitions the server remembers; the oldest
// go first.
const MaxTransitions = 20000

// record remembers a transition. It runs under s.mu.
func (s *Server) record(now time.Time, ref apisix.Ref, ip string, port int, from, to string) {
	s.transitions = keepNewest(s.transitions, Transition{now, ref, ref.String(), ip, port, from, to}, MaxTransitions)
}

// keepNewest appends t to ts, of which newest(ts, limit) are kept. The
// oldest are dropped in one move once ts holds twice limit, so that a long
// run of changes costs one copy per limit of them, not a copy of the
// whole list each.
func keepNewest(ts []Transition, t Transition, limit int) []Transition {
	if len(ts) >= 2*limit {
		ts = slices.Delete(ts, 0, len(ts)-limit)
	}
	return append(ts, t)
}

// newest is the newest limit of ts, oldest first.
func newest(ts []Transition, limit int) []Transition {
	return ts[max(0, len(ts)-limit):]
}

// Transitions are the changes of node statuses so far (at most
// MaxTransitions), oldest first, of ref or, for the zero Ref, of every
// resource: when active checks (or a test) moved a node, at the server
// clock's time, which is when the control API started to show it. Labs
// time rhi's reaction from them.
func (s *Server) Transitions(ref apisix.Ref) []Transition {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Transition
	for _, t := range newest(s.transitions, MaxTransitions) {
		if ref == (apisix.Ref{}) || t.Ref == ref {
			out = append(out, t)
		}
	}
	return out
}

// Advance moves a ManualClock forward by d in TickInterval steps, calling
// Tick after each, as Run does in real time. It panics when the server's
// clock is not a ManualClock.
func (s *Server) Advance(d time.Duration) {
	c, ok := s.clock.(*ManualClock)
	if !ok {
		panic("apisixtest: Advance needs a ManualClock")
	}
	for d > 0 {
		step := min(d, TickInterval)
		c.Add(step)
		d -= step
		s.Tick()
	}
}

// CheckerWorkers lists the workers (counted from 1) that have a checker of
// ref, and which worker probes: what a test needs to know about the
// divergence between workers.
func (s *Server) CheckerWorkers(ref apisix.Ref) (have []int, probing int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range s.workers {
		if w.checkers[ref] != nil {
			have = append(have, i+1)
		}
	}
	return have, s.probing
}

func sortedRefs[V any](m map[apisix.Ref]V) []apisix.Ref {
	refs := make([]apisix.Ref, 0, len(m))
	for ref := range m {
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, func(a, b apisix.Ref) int {
		if a.Type != b.Type {
			if a.Type < b.Type {
				return -1
			}
			return 1
		}
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return refs
}

// Config is the nodes ref is configured with (SetUpstream, SetNodes), in
// order, without statuses; nil for a missing resource.
func (s *Server) Config(ref apisix.Ref) []Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.res[ref]; r != nil {
		return slices.Clone(r.config)
	}
	return nil
}

// FreshNodes returns count nodes (without statuses) at an address no
// other FreshNodes call of s returned: 10.a.b.c, with a.b.c counting the
// calls, on ports 8000, 8001, … Nodes of different resources then have
// servers of their own, which SetBackend kills or revives one by one.
func (s *Server) FreshNodes(count int) []Node {
	s.mu.Lock()
	s.fresh++
	k := s.fresh
	s.mu.Unlock()
	ip := fmt.Sprintf("10.%d.%d.%d", k>>16&255, k>>8&255, k&255)
	nodes := make([]Node, count)
	for j := range nodes {
		nodes[j] = Node{IP: ip, Port: 8000 + j}
	}
	return nodes
}
