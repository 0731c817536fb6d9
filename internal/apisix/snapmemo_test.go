package apisix_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/health"
)

// TestPollPlanRandomly runs random steps of a control API that changes
// (node statuses and counts, resources removed or without checker, faults
// of one resource or of the list) and polls a plan after each, in each
// mode: a planned poll says what an unplanned Poll of the same keys says,
// whether or not it returns its last snapshot again, and it returns the
// last one only when nothing changed and nothing Failed. Polls of other
// keys on the same client come in between, as `rhi verify`'s would.
func TestPollPlanRandomly(t *testing.T) {
	for _, mode := range []apisix.Mode{apisix.ModeList, apisix.ModePerUpstream, apisix.ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			for seed := range uint64(4) {
				pollPlanRandomly(t, mode, seed)
			}
		})
	}
}

func pollPlanRandomly(t *testing.T, mode apisix.Mode, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 15))
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	refs := make([]health.Ref, 8)
	for i := range refs {
		refs[i] = health.Ref{Type: "upstreams", ID: fmt.Sprint("r", i)}
		srv.SetNodes(refs[i], apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Healthy}, apisixtest.Node{IP: "10.0.0.2", Port: 80, Status: apisixtest.Healthy})
	}
	// Two prefixes of one resource, and a repeated key.
	keys := ups("/apisix/upstreams/r0", "/other/upstreams/r0", "/apisix/upstreams/r1", "/apisix/upstreams/r1",
		"/apisix/upstreams/r2", "/apisix/upstreams/r3", "/apisix/upstreams/r4", "/apisix/upstreams/r5",
		"/apisix/upstreams/r6", "/apisix/upstreams/r7")
	c := newClient(t, ts.URL, apisix.Options{Mode: mode, Timeout: 5 * time.Second})
	defer c.CloseIdleConnections()
	plan := health.NewPlan(keys)

	last := c.PollPlan(context.Background(), plan)
	reused := 0
	for step := range 60 {
		changed := randomChange(rng, srv, refs)
		if rng.IntN(4) == 0 {
			c.Poll(context.Background(), ups("/apisix/upstreams/r3", "/x/upstreams/r9"))
		}
		got := c.PollPlan(context.Background(), plan)
		want := c.Poll(context.Background(), keys)
		if g, w := describe(got), describe(want); !maps.Equal(g, w) {
			t.Fatalf("seed %d step %d (%s): planned %v, unplanned %v", seed, step, changed, g, w)
		}
		same := sameMap(got, last)
		failed := false
		for _, r := range got {
			failed = failed || r.Verdict == health.Failed
		}
		if same && (failed || !maps.Equal(describe(got), describe(last))) {
			t.Fatalf("seed %d step %d (%s): the last snapshot again, though it changed or failed", seed, step, changed)
		}
		if same {
			reused++
		}
		last = got
	}
	if reused == 0 {
		t.Errorf("seed %d: no poll returned its last snapshot again", seed)
	}
}

// randomChange changes the server at random, or leaves it, and says what
// it did; faults last one step.
func randomChange(rng *rand.Rand, srv *apisixtest.Server, refs []health.Ref) string {
	for _, ref := range refs {
		srv.SetFault(ref, apisixtest.NoFault)
	}
	srv.SetListFault(apisixtest.NoFault)
	if rng.IntN(2) == 0 {
		return "nothing"
	}
	ref := refs[rng.IntN(len(refs))]
	statuses := []string{apisixtest.Healthy, apisixtest.Unhealthy, apisixtest.MostlyHealthy, apisixtest.MostlyUnhealthy}
	node := func(i int) apisixtest.Node {
		return apisixtest.Node{IP: fmt.Sprint("10.0.0.", i), Port: 80, Status: statuses[rng.IntN(len(statuses))]}
	}
	switch rng.IntN(10) {
	case 0:
		srv.SetNodes(ref, node(1))
		return "one node " + ref.String()
	case 1:
		srv.SetNodes(ref, node(1), node(2), node(3))
		return "three nodes " + ref.String()
	case 2:
		srv.Remove(ref)
		return "removed " + ref.String()
	case 3:
		srv.NoChecker(ref)
		return "no checker " + ref.String()
	case 4:
		srv.SetFault(ref, apisixtest.Status500)
		return "500 " + ref.String()
	case 7:
		srv.SetNodes(ref) // no checker too, with another error
		return "no nodes " + ref.String()
	case 8:
		srv.SetNodes(ref, node(1), node(2))
		return "two nodes " + ref.String()
	case 5:
		srv.SetListFault(apisixtest.Garbage)
		return "garbled list"
	case 6:
		srv.SetNodes(ref, node(1), node(2))
		return "two nodes " + ref.String()
	}
	return "nothing"
}

func describe(snap health.Snapshot) map[string]string {
	out := make(map[string]string, len(snap))
	for k, r := range snap {
		out[k] = fmt.Sprintf("%v %d/%d %v", r.Verdict, r.Healthy, r.Total, r.Err)
	}
	return out
}

// sameMap reports whether a and b are the same map, not equal ones.
func sameMap(a, b health.Snapshot) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestPollPlanSteady: a steady poll of a plan returns its last snapshot
// again; a poll of the same keys without the plan, or of another plan of
// them, never does; a plan with a key Ref.Check rejects is never reused;
// concurrent polls of one plan agree (run with -race).
func TestPollPlanSteady(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	_, names := manyUpstreams(srv, 3)
	keys := ups(names...)
	c := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModeList, Timeout: 5 * time.Second})
	defer c.CloseIdleConnections()
	ctx := context.Background()
	plan := health.NewPlan(keys)

	first := c.PollPlan(ctx, plan)
	if !sameMap(c.PollPlan(ctx, plan), first) {
		t.Fatal("a steady poll of a plan made a new snapshot")
	}
	if sameMap(c.Poll(ctx, keys), first) {
		t.Fatal("Poll returned a plan's snapshot")
	}
	if sameMap(c.PollPlan(ctx, health.NewPlan(keys)), first) {
		t.Fatal("another plan of the same keys got the first plan's snapshot")
	}

	bad := append(ups(names...), health.Upstream{Key: "/apisix/upstreams/bad", Ref: health.Ref{Type: "upstreams", ID: ".."}})
	badPlan := health.NewPlan(bad)
	a := c.PollPlan(ctx, badPlan)
	if b := c.PollPlan(ctx, badPlan); sameMap(a, b) || b["/apisix/upstreams/bad"].Verdict != health.Failed {
		t.Fatalf("a plan with an invalid key: reused %v, bad key %v", sameMap(a, b), b["/apisix/upstreams/bad"])
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 10 {
				if got := describe(c.PollPlan(ctx, plan)); !maps.Equal(got, describe(first)) {
					t.Errorf("concurrent poll: %v, want %v", got, describe(first))
					return
				}
			}
		})
	}
	wg.Wait()
}
