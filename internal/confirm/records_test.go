package confirm

import (
	"context"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/router"
)

// TestKeptKeepsAVIP: what the runner keeps of a VIP gives back every
// field, CheckedAt from the check and changedAt as the same instant, for
// every combination of the booleans.
func TestKeptKeepsAVIP(t *testing.T) {
	checked := time.Now() // with a monotonic reading
	changed := time.Date(2026, 12, 3, 11, 0, 0, 123456789, time.FixedZone("x", 3600))
	for bits := range 1 << 6 {
		for _, ch := range []time.Time{{}, changed, time.Now()} {
			v := VIP{
				Expected: router.Present, Agrees: bits&1 != 0, Stale: bits&2 != 0, Problem: "no Established BGP session carries it",
				InTable: bits&4 != 0, Exported: map[string]bool{"peer_a": true}, CheckedAt: checked,
				Latency: 1234 * time.Millisecond, DisagreeingSince: changed.Add(time.Second), Renewed: 7,
				changedAt: ch, warned: bits&8 != 0, agreed: bits&16 != 0, tries: MaxRenewals, gaveUp: bits&32 != 0,
			}
			k := newKept(p4, v)
			got := k.vip(checked)
			if !got.changedAt.Equal(ch) || got.changedAt.IsZero() != ch.IsZero() {
				t.Fatalf("changedAt %v came back as %v", ch, got.changedAt)
			}
			got.changedAt, v.changedAt = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, v) || k.prefix != p4 {
				t.Fatalf("bits %06b: kept %+v\ncame back as %+v", bits, v, got)
			}
		}
	}
}

// TestRunnerCarriesStoryAcrossOrder: a check in another order (a reload)
// still finds each VIP's last record by its prefix: the disagreement that
// started before it goes on (its start, its renewals), and a VIP new to the
// check starts afresh.
func TestRunnerCarriesStoryAcrossOrder(t *testing.T) {
	g := newRunnerRig()
	ctx := context.Background()
	other := netip.MustParsePrefix("10.0.0.2/32")
	fresh := netip.MustParsePrefix("10.0.0.3/32")
	a, b, c := missedAdd, agreesPresent, missedAdd
	b.Prefix, c.Prefix = other, fresh
	changed := map[netip.Prefix]time.Time{p4: t0, other: t0, fresh: t0}
	g.bird.rep = router.Report{VIPs: []router.VIPReport{a, b}}
	g.r.Once(ctx, Job{Changed: changed, IfaceUp: true})
	g.now = t0.Add(RenewAfter)
	g.r.Once(ctx, Job{Changed: changed, IfaceUp: true}) // renews p4
	if len(g.renewed) != 1 {
		t.Fatalf("renewals %v, want one", g.renewed)
	}
	g.now = t0.Add(3 * RenewAfter)
	g.bird.rep = router.Report{VIPs: []router.VIPReport{c, b, a}}
	g.r.Once(ctx, Job{Changed: changed, IfaceUp: true})
	_, rs := g.r.Results()
	if rs.Len() != 3 || rs.Prefix(0) != fresh || rs.Prefix(2) != p4 {
		t.Fatalf("records %+v: want the check's order", rs)
	}
	find := rs.Lookup()
	// p4's second renewal: RenewAfter has passed since its first, which
	// only the record kept from before the reorder knows.
	moved, ok := find(0, p4) // not at 0: found by prefix
	if !ok || moved.Renewed != 2 || moved.tries != 2 || len(g.renewed) != 2 || !moved.CheckedAt.Equal(g.now) {
		t.Errorf("p4 after the reorder: %+v, renewals %v; want its second renewal", moved, g.renewed)
	}
	if n, ok := find(0, fresh); !ok || n.Renewed != 0 || !n.DisagreeingSince.Equal(g.now) {
		t.Errorf("new VIP: %+v; want a disagreement that starts now", n)
	}
	if ag, ok := find(1, other); !ok || !ag.Agrees {
		t.Errorf("agreeing VIP: %+v", ag)
	}
	if _, ok := find(1, netip.MustParsePrefix("10.9.9.9/32")); ok {
		t.Error("a VIP never checked was found")
	}
}

// TestRecordsNeverChange: results handed out are not changed by a later
// BIRD-away (stale) or check.
func TestRecordsNeverChange(t *testing.T) {
	g := newRunnerRig()
	ctx := context.Background()
	job := Job{Changed: map[netip.Prefix]time.Time{p4: t0}, IfaceUp: true}
	g.bird.rep = router.Report{VIPs: []router.VIPReport{agreesPresent}}
	g.r.Once(ctx, job)
	_, before := g.r.Results()
	g.bird.rep = router.Report{Err: context.DeadlineExceeded}
	g.r.Once(ctx, job)
	_, after := g.r.Results()
	if before.VIP(0).Stale || !after.VIP(0).Stale {
		t.Errorf("stale before %v, after %v: want false, true", before.VIP(0).Stale, after.VIP(0).Stale)
	}
	g.r.Once(ctx, job)
	if _, again := g.r.Results(); &again.recs[0] != &after.recs[0] {
		t.Error("marking stale records stale again copied them")
	}
}
