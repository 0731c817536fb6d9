package apisixtest_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
)

// TestDefaultCostFitsAPISIX: the default cost model lands in the ranges
// measured on APISIX 3.18 (see Cost), but for the list at 100 upstreams,
// which it overstates by up to 1 ms.
func TestDefaultCostFitsAPISIX(t *testing.T) {
	c := apisixtest.DefaultCost()
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	tests := []struct {
		n              int
		listLo, listHi time.Duration
		getLo, getHi   time.Duration
	}{
		{100, ms(2.0), ms(3.4), ms(0.075), ms(0.085)},
		{1000, ms(30), ms(34), ms(0.13), ms(0.17)},
		{3000, ms(97), ms(116), ms(0.27), ms(0.39)},
		{10000, ms(420), ms(427), ms(0.72), ms(0.92)},
	}
	for _, tt := range tests {
		if got := c.List(tt.n); got < tt.listLo || got > tt.listHi {
			t.Errorf("list of %d: %v, want %v–%v", tt.n, got, tt.listLo, tt.listHi)
		}
		if got := c.Get(tt.n); got < tt.getLo || got > tt.getHi {
			t.Errorf("one GET among %d: %v, want %v–%v", tt.n, got, tt.getLo, tt.getHi)
		}
	}
}

// costClock is the real time as a test sets it, and a record of the
// times requests waited until.
type costClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration // since t0
}

func (c *costClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *costClock) wait(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, t.Sub(t0))
}

func (c *costClock) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now, c.waits = t0.Add(d), nil
}

// TestServingLoop: a request occupies its worker's loop for its cost, and
// a request for the same worker that arrives meanwhile waits for it; the
// other worker's requests do not. The accounting records both.
func TestServingLoop(t *testing.T) {
	clk := &costClock{now: t0}
	s := apisixtest.NewWith(apisixtest.Options{Workers: 2, PerRequest: true, Cost: apisixtest.DefaultCost()})
	apisixtest.SetCostClock(s, clk.Now, clk.wait)
	for i := range 1000 {
		s.SetNodes(apisix.Ref{Type: "upstreams", ID: fmt.Sprint(i)}, n("10.0.0.1", 80, apisixtest.Healthy), n("10.0.0.2", 80, apisixtest.Healthy))
	}
	list := apisixtest.DefaultCost().List(1000) // 32.1 ms
	get := apisixtest.DefaultCost().Get(1000)   // 149 µs
	data := apisixtest.DefaultCost().Data       // 50 µs

	steps := []struct {
		at        time.Duration
		path      string
		handler   string          // "api" or "data"
		wantWaits []time.Duration // the request's start and finish, since t0
	}{
		{0, "/v1/healthcheck", "api", []time.Duration{0, list}},                                                                       // worker 1
		{time.Millisecond, "/upstreams/1", "data", []time.Duration{time.Millisecond, time.Millisecond + data}},                        // worker 2
		{2 * time.Millisecond, "/upstreams/1", "data", []time.Duration{list, list + data}},                                            // worker 1: waits for the list
		{3 * time.Millisecond, "/v1/healthcheck/upstreams/1", "api", []time.Duration{3 * time.Millisecond, 3*time.Millisecond + get}}, // worker 2
		{4 * time.Millisecond, "/v1/healthcheck/upstreams/1", "api", []time.Duration{list + data, list + data + get}},                 // worker 1
	}
	for i, st := range steps {
		clk.set(st.at)
		h := s.DataPath()
		if st.handler == "api" {
			h = s
		}
		if got := serve(h, st.path); got.status != 200 {
			t.Fatalf("step %d: HTTP %d", i, got.status)
		}
		clk.mu.Lock()
		waits := clk.waits
		clk.mu.Unlock()
		if fmt.Sprint(waits) != fmt.Sprint(st.wantWaits) {
			t.Errorf("step %d (%s at %v): waited until %v, want %v", i, st.path, st.at, waits, st.wantWaits)
		}
	}
	clk.set(time.Second)
	a := s.Accounting()
	if a.Elapsed != time.Second || len(a.Workers) != 2 {
		t.Fatalf("elapsed %v, %d workers", a.Elapsed, len(a.Workers))
	}
	w1, w2 := a.Workers[0], a.Workers[1]
	want1 := apisixtest.WorkerUsage{Worker: 1,
		List: apisixtest.Usage{Requests: 1, Busy: list},
		Get:  apisixtest.Usage{Requests: 1, Busy: get, Wait: list + data - 4*time.Millisecond, MaxWait: list + data - 4*time.Millisecond},
		Data: apisixtest.Usage{Requests: 1, Busy: data, Wait: list - 2*time.Millisecond, MaxWait: list - 2*time.Millisecond},
	}
	want2 := apisixtest.WorkerUsage{Worker: 2,
		Get:  apisixtest.Usage{Requests: 1, Busy: get},
		Data: apisixtest.Usage{Requests: 1, Busy: data},
	}
	if w1 != want1 || w2 != want2 {
		t.Errorf("accounting:\n%+v\n%+v\nwant\n%+v\n%+v", w1, w2, want1, want2)
	}
	if got := a.Total().Control().Busy; got != list+2*get {
		t.Errorf("control API busy %v, want %v", got, list+2*get)
	}
	s.ResetAccounting()
	if a := s.Accounting(); a.Total() != (apisixtest.WorkerUsage{}) || a.Elapsed != 0 {
		t.Errorf("after reset: %+v", a)
	}
}

// TestDataLatencyBehindList: the data path's loop latencies are what the
// serving loop says. Requests alternate between 2 workers; a list at 0 on
// worker 1, then 1,000 data requests 1 ms apart from 1 ms on. Worker 1
// takes the even ones: the j-th, arriving at 2j ms, waits behind the list
// and the requests queued before it, so it finishes at list + j × 50 µs
// while the queue lasts: a latency of list + j × 50 µs − 2j ms. Every
// other request takes its 50 µs.
func TestDataLatencyBehindList(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	data := apisixtest.DefaultCost().Data
	tests := []struct {
		name string
		list int // upstreams listed at 0; 0: no list
		want apisixtest.Latency
	}{
		{"no list", 0, apisixtest.Latency{Count: 1000, Sampled: 1000, P50: data, P99: data, Max: data}},
		// A list of 100 (3.111 ms) delays one request (at 2 ms, done at
		// 3.161 ms): 0.1 % of them, which leaves the p99 alone.
		{"list of 100", 100, apisixtest.Latency{Count: 1000, Sampled: 1000, P50: data, P99: data, Max: ms(1.161)}},
		// A list of 1,000 (32.1 ms) delays 16, by 32.1 − 1.95j ms for
		// j = 1…16 (30.15 down to 0.9 ms): 1.6 % of them. The p99, the
		// 990th of 1,000, is the 11th longest, j = 11: 10.65 ms.
		{"list of 1000", 1000, apisixtest.Latency{Count: 1000, Sampled: 1000, P50: data, P99: ms(10.65), Max: ms(30.15)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &costClock{now: t0}
			s := apisixtest.NewWith(apisixtest.Options{Workers: 2, PerRequest: true, Cost: apisixtest.DefaultCost()})
			apisixtest.SetCostClock(s, clk.Now, clk.wait)
			for i := range max(tt.list, 1) {
				s.SetNodes(apisix.Ref{Type: "upstreams", ID: fmt.Sprint(i + 1)}, n("10.0.0.1", 80, apisixtest.Healthy))
			}
			if tt.list > 0 {
				if got := serve(s, "/v1/healthcheck"); got.status != 200 {
					t.Fatalf("list: HTTP %d", got.status)
				}
			} else {
				// Something else takes worker 1's turn, at no cost.
				serve(s, "/v1/nothing")
			}
			for k := 1; k <= 1000; k++ {
				clk.set(time.Duration(k) * time.Millisecond)
				if got := serve(s.DataPath(), "/upstreams/1"); got.status != 200 {
					t.Fatalf("data request %d: HTTP %d", k, got.status)
				}
			}
			if got := s.Accounting().DataLatency; got != tt.want {
				t.Errorf("data latency %+v, want %+v", got, tt.want)
			}
			s.ResetAccounting()
			if got := s.Accounting().DataLatency; got != (apisixtest.Latency{}) {
				t.Errorf("after reset: %+v", got)
			}
		})
	}
}

// TestNoCostNoWait: without a cost model, nothing waits.
func TestNoCostNoWait(t *testing.T) {
	clk := &costClock{now: t0}
	s := apisixtest.New()
	apisixtest.SetCostClock(s, clk.Now, clk.wait)
	s.SetNodes(api, n("10.0.0.1", 80, apisixtest.Healthy))
	for range 3 {
		serve(s, "/v1/healthcheck")
	}
	if fmt.Sprint(clk.waits) != "[0s 0s 0s 0s 0s 0s]" {
		t.Errorf("waited until %v, want now each time", clk.waits)
	}
	if a := s.Accounting(); a.Total().List.Requests != 3 || a.Total().List.Busy != 0 {
		t.Errorf("accounting %+v", a.Total())
	}
}

// BenchmarkList10000 is the fake's own time to build the list of 10,000
// upstreams, on top of which nothing is modelled: the cost model's 420 ms
// must stay well above it.
func BenchmarkList10000(b *testing.B) {
	s := apisixtest.New()
	for i := range 10000 {
		s.SetNodes(apisix.Ref{Type: "upstreams", ID: fmt.Sprint(i)}, n("10.0.0.1", 80, apisixtest.Healthy), n("10.0.0.2", 80, apisixtest.Unhealthy))
	}
	b.ReportAllocs()
	for b.Loop() {
		serve(s, "/v1/healthcheck")
	}
}
