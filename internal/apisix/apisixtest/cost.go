package apisixtest

import (
	"runtime"
	"sync"
	"time"
)

// Cost is what serving a request costs the worker that serves it: the time
// the worker's serving loop is busy with it, while every other request
// that worker has waits. The zero value costs nothing.
//
// Real APISIX serves the control API and the proxied traffic on the same
// nginx workers, and builds and encodes a control-API answer in one go,
// so a request that lands on a worker busy with the list waits for the
// whole list. DefaultCost is fitted to APISIX 3.18 with 2 workers and N
// upstreams of 2 nodes each, with active checks and a route each:
//
//	N upstreams   list body   worker time per list GET   per one-upstream GET
//	100           35 KB       2.0–2.4 ms                 0.08 ms
//	1,000         358 KB      32 ms                      0.13–0.17 ms
//	3,000         1.08 MB     97–116 ms                  0.27–0.39 ms
//	10,000        3.62 MB     420–427 ms                 0.72–0.92 ms
type Cost struct {
	// The list, GET /v1/healthcheck, costs N × (ListPerEntry +
	// ListPerEntryPer1000 × N/1000) for N entries (resources with checks).
	ListPerEntry, ListPerEntryPer1000 time.Duration
	// A one-resource GET costs GetBase + GetPerResource × N for N
	// resources of its type: APISIX scans the type's table for the id.
	GetBase, GetPerResource time.Duration
	// Data is what a data-path request costs its worker.
	Data time.Duration
	// SpinBelow is how much of the end of every wait is spent spinning
	// instead of sleeping. Go's sleeps are coarse (about 1 ms on a loaded
	// Linux host), and a 0.1 ms GET that took 1.1 ms would tell a client
	// measuring it the wrong cost; spinning the last stretch makes an
	// answer leave when its cost says, at the price of the CPU an APISIX
	// worker would have spent on it. 0: sleep only.
	SpinBelow time.Duration
}

// DefaultCost is fitted to the table in Cost's comment: the list at
// N × (31 µs + 1.1 µs × N/1000) (3.1, 32, 103 and 420 ms at 100, 1,000,
// 3,000 and 10,000), a one-upstream GET at 75 µs + 74 ns × N (0.08, 0.15,
// 0.30 and 0.82 ms), a data-path request at 50 µs, and the last 2 ms of
// every wait spun.
func DefaultCost() Cost {
	return Cost{
		ListPerEntry: 31 * time.Microsecond, ListPerEntryPer1000: 1100 * time.Nanosecond,
		GetBase: 75 * time.Microsecond, GetPerResource: 74 * time.Nanosecond,
		Data:      50 * time.Microsecond,
		SpinBelow: 2 * time.Millisecond,
	}
}

// List is the cost of a list of n entries.
func (c Cost) List(n int) time.Duration {
	per := c.ListPerEntry + time.Duration(int64(c.ListPerEntryPer1000)*int64(n)/1000)
	return time.Duration(n) * per
}

// Get is the cost of a one-resource GET among n resources of its type.
func (c Cost) Get(n int) time.Duration { return c.GetBase + time.Duration(n)*c.GetPerResource }

// Request kinds, for the accounting.
const (
	kindList  = iota // GET /v1/healthcheck
	kindGet          // GET /v1/healthcheck/<type>/<id>, any answer
	kindOther        // any other control-API request
	kindData         // a data-path request
	kinds
)

// Usage is what one kind of request took from a worker's serving loop.
type Usage struct {
	Requests int64 `json:"requests"`
	// Busy is the time the loop spent serving them (their costs).
	Busy time.Duration `json:"busy_ns"`
	// Wait is the time they spent waiting for the loop, MaxWait the
	// longest wait of one.
	Wait    time.Duration `json:"wait_ns"`
	MaxWait time.Duration `json:"max_wait_ns"`
}

func (u Usage) plus(v Usage) Usage {
	return Usage{u.Requests + v.Requests, u.Busy + v.Busy, u.Wait + v.Wait, max(u.MaxWait, v.MaxWait)}
}

// WorkerUsage is one worker's serving loop, by kind of request.
type WorkerUsage struct {
	Worker int   `json:"worker"` // counted from 1; 0 in a total
	List   Usage `json:"list"`   // GET /v1/healthcheck
	Get    Usage `json:"get"`    // GET /v1/healthcheck/<type>/<id>
	Other  Usage `json:"other"`  // other control-API requests
	Data   Usage `json:"data"`   // the data path
}

// Control is the control API's part: List, Get and Other together.
func (u WorkerUsage) Control() Usage { return u.List.plus(u.Get).plus(u.Other) }

// Accounting is the fake's record of its serving loops, in real time.
type Accounting struct {
	// Since is when the record started (New or ResetAccounting), Elapsed
	// the real time since: a worker's loop time is Elapsed, so its share
	// spent on the control API is Control().Busy / Elapsed.
	Since   time.Time     `json:"since"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Workers []WorkerUsage `json:"workers"`
	// DataLatency is the data path's loop latencies over all workers.
	DataLatency Latency `json:"data_latency"`
}

// Total sums the workers.
func (a Accounting) Total() WorkerUsage {
	var t WorkerUsage
	for _, w := range a.Workers {
		t.List, t.Get, t.Other, t.Data = t.List.plus(w.List), t.Get.plus(w.Get), t.Other.plus(w.Other), t.Data.plus(w.Data)
	}
	return t
}

// loop is one worker's serving loop: one request at a time, in the order
// they arrive. Its clock is virtual: a request starts when it arrives or
// when the one before it finishes, whichever is later, and finishes its
// cost later, whatever the host's timers did meanwhile, so their slack
// never accumulates into the queue.
type loop struct {
	mu        sync.Mutex
	busyUntil time.Time
	use       [kinds]Usage
}

// reserve queues a request of kind costing cost, arriving now, and
// returns when it arrived and when the loop starts and finishes it. The
// arrival is read under the loop's lock, so arrivals follow the queue's
// order: a request whose goroutine the host paused on its way in arrives
// when it reaches the loop, and does not count the requests queued
// meanwhile as its wait.
func (l *loop) reserve(kind int, now func() time.Time, cost time.Duration) (arrive, start, finish time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	arrive = now()
	start = arrive
	if l.busyUntil.After(start) {
		start = l.busyUntil
	}
	finish = start.Add(cost)
	l.busyUntil = finish
	u := &l.use[kind]
	wait := start.Sub(arrive)
	u.Requests++
	u.Busy += cost
	u.Wait += wait
	u.MaxWait = max(u.MaxWait, wait)
	return arrive, start, finish
}

func (l *loop) usage(worker int) WorkerUsage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return WorkerUsage{Worker: worker, List: l.use[kindList], Get: l.use[kindGet], Other: l.use[kindOther], Data: l.use[kindData]}
}

func (l *loop) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.use = [kinds]Usage{}
}

// Accounting returns the serving loops' record so far.
func (s *Server) Accounting() Accounting {
	s.acctMu.Lock()
	since := s.acctSince
	s.acctMu.Unlock()
	a := Accounting{Since: since, Elapsed: s.costNow().Sub(since), DataLatency: s.dataLatency.summary()}
	for i, w := range s.workers {
		a.Workers = append(a.Workers, w.loop.usage(i+1))
	}
	return a
}

// ResetAccounting starts a new record.
func (s *Server) ResetAccounting() {
	s.acctMu.Lock()
	s.acctSince = s.costNow()
	s.acctMu.Unlock()
	for _, w := range s.workers {
		w.loop.reset()
	}
	s.dataLatency.reset()
}

// waitUntil returns at t: it sleeps until SpinBelow before t, then spins,
// yielding to other goroutines.
func waitUntil(t time.Time, spinBelow time.Duration) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	if d > spinBelow {
		time.Sleep(d - spinBelow)
	}
	for time.Now().Before(t) {
		runtime.Gosched()
	}
}
