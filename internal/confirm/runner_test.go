package confirm

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/router"
)

// scripted answers every check with its report.
type scripted struct{ rep router.Report }

func (s *scripted) Check(context.Context, router.Input) router.Report { return s.rep }

type runnerRig struct {
	r       *Runner
	bird    *scripted
	now     time.Time
	logs    *logtest.Hook
	renewed []map[netip.Prefix]bool
}

func newRunnerRig() *runnerRig {
	log, hook := logtest.NewNullLogger()
	g := &runnerRig{bird: &scripted{}, now: t0, logs: hook}
	g.r = New(g.bird, "/run/bird/bird.ctl", log, func() time.Time { return g.now }, func(m map[netip.Prefix]bool) { g.renewed = append(g.renewed, m) })
	return g
}

func (g *runnerRig) count(level logrus.Level, msg string) int {
	n := 0
	for _, e := range g.logs.AllEntries() {
		if e.Level == level && e.Message == msg {
			n++
		}
	}
	return n
}

// manyMissed is n VIPs whose adds BIRD missed, changed at t0.
func manyMissed(n int) (router.Report, Job) {
	var rep router.Report
	job := Job{Changed: map[netip.Prefix]time.Time{}, IfaceUp: true}
	for i := range n {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i / 250), byte(i%250 + 1)}), 32)
		r := missedAdd
		r.Prefix = p
		rep.VIPs = append(rep.VIPs, r)
		job.Changed[p] = t0
	}
	return rep, job
}

// TestRunnerBatchesRenewals: at most RenewBatch renewals per check, the
// rest at the next ones; MaxRenewals each, then one error for them all.
func TestRunnerBatchesRenewals(t *testing.T) {
	g := newRunnerRig()
	n := 2*RenewBatch + RenewBatch/2
	g.bird.rep, _ = manyMissed(n)
	_, job := manyMissed(n)
	ctx := context.Background()
	if g.r.Once(ctx, job) {
		t.Fatal("every VIP disagrees: not consistent")
	}
	g.now = g.now.Add(RenewAfter)
	var batches []int
	for range 3 {
		g.r.Once(ctx, job)
		batches = append(batches, len(g.renewed[len(g.renewed)-1]))
	}
	if want := []int{RenewBatch, RenewBatch, RenewBatch / 2}; len(batches) != 3 || batches[0] != want[0] || batches[1] != want[1] || batches[2] != want[2] {
		t.Fatalf("batches %v, want %v", batches, want)
	}
	for range 6 {
		g.now = g.now.Add(RenewAfter)
		g.r.Once(ctx, job)
	}
	total := 0
	for _, m := range g.renewed {
		total += len(m)
	}
	if total != n*MaxRenewals {
		t.Errorf("%d renewals, want %d", total, n*MaxRenewals)
	}
	if c := g.count(logrus.ErrorLevel, "BIRD still does not see these addresses as the interface holds them after 2 renewals each: "+
		"not a missed notification; check BIRD's direct protocol (its interface pattern and table); rhi stops renewing them until they change"); c != 3 {
		t.Errorf("giving up logged %d times, want 3: one per check that gave up on a batch", c)
	}
	st, vips := g.r.Snapshot()
	if st.Disagree != n || st.Agree != 0 || len(vips) != n {
		t.Errorf("status %+v with %d VIPs", st, len(vips))
	}
}

// TestRunnerBirdAway: an unreachable BIRD makes every record stale, is
// logged once, and its return is logged once.
func TestRunnerBirdAway(t *testing.T) {
	g := newRunnerRig()
	agree := agreesPresent
	g.bird.rep = router.Report{VIPs: []router.VIPReport{agree}, Protocols: []router.ProtocolState{{Name: "peer_b", Established: true}}}
	job := Job{Changed: map[netip.Prefix]time.Time{p4: t0}, IfaceUp: true}
	ctx := context.Background()
	if !g.r.Once(ctx, job) {
		t.Fatal("BIRD agrees: consistent")
	}
	g.bird.rep = router.Report{Err: errors.New("dial unix /run/bird/bird.ctl: connect: connection refused")}
	for range 3 {
		g.now = g.now.Add(time.Second)
		if g.r.Once(ctx, job) {
			t.Fatal("BIRD away: not consistent")
		}
	}
	if n := g.r.Checks(); n != 4 {
		t.Errorf("Checks = %d after 4 checks, want 4: /status would not be rendered anew", n)
	}
	st, vips := g.r.Snapshot()
	if st.Error == "" || st.Protocols != nil || !st.LastOK.Equal(t0) || !vips[p4].Stale || !vips[p4].Agrees {
		t.Errorf("status %+v, vip %+v: want the error, no protocols, the old LastOK, a stale agreement", st, vips[p4])
	}
	if c := g.count(logrus.WarnLevel, "cannot confirm through BIRD; the interface is still managed"); c != 1 {
		t.Errorf("BIRD away logged %d times, want once", c)
	}
	g.bird.rep = router.Report{VIPs: []router.VIPReport{agree}}
	g.r.Once(ctx, job)
	if c := g.count(logrus.InfoLevel, "BIRD reachable again"); c != 1 {
		t.Errorf("BIRD back logged %d times, want once", c)
	}
	if _, vips := g.r.Snapshot(); vips[p4].Stale {
		t.Errorf("BIRD back: still stale %+v", vips[p4])
	}
}

// TestRunnerSessionsAndProblems: a session's state and the set's problems
// are logged when they change, not at every check; a VIP no longer checked
// is forgotten.
func TestRunnerSessionsAndProblems(t *testing.T) {
	g := newRunnerRig()
	down := router.ProtocolState{Name: "peer_b", State: "start", BGPState: "Active", Problem: "not Established"}
	g.bird.rep = router.Report{VIPs: []router.VIPReport{sessionDown}, Protocols: []router.ProtocolState{down}, Problems: []string{"no direct protocol for IPv6"}}
	job := Job{Changed: map[netip.Prefix]time.Time{}, IfaceUp: true}
	ctx := context.Background()
	for range 3 {
		g.r.Once(ctx, job)
	}
	if c := g.count(logrus.WarnLevel, "BGP session not established: VIPs are not announced through it"); c != 1 {
		t.Errorf("session down logged %d times, want once", c)
	}
	if c := g.count(logrus.ErrorLevel, "BIRD cannot announce VIPs"); c != 1 {
		t.Errorf("problem logged %d times, want once", c)
	}
	g.bird.rep = router.Report{Protocols: []router.ProtocolState{{Name: "peer_b", State: "up", BGPState: "Established", Established: true}}}
	if !g.r.Once(ctx, job) {
		t.Error("all well again: consistent")
	}
	if g.count(logrus.InfoLevel, "BGP session established") != 1 || g.count(logrus.InfoLevel, "BIRD problems cleared") != 1 {
		t.Error("recovery not logged once")
	}
	if _, vips := g.r.Snapshot(); len(vips) != 0 {
		t.Errorf("VIPs no longer checked are kept: %v", vips)
	}
}
