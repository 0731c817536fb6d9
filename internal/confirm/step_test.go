package confirm

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/router"
)

var (
	t0 = time.Unix(1_700_000_000, 0)
	p4 = netip.MustParsePrefix("10.0.0.100/32")
)

func at(d time.Duration) time.Time { return t0.Add(d) }

// Reports as BIRD gives them.
var (
	agreesPresent = router.VIPReport{Prefix: p4, Expected: router.Present, OnInterface: true, InTable: true, DirectUp: true, Agrees: true}
	// missedAdd: on the interface, not in BIRD's table, a direct protocol up.
	missedAdd = router.VIPReport{Prefix: p4, Expected: router.Present, OnInterface: true, DirectUp: true, Problem: "interface true, bird table false"}
	// missedDelete: gone from the interface, still in BIRD's table.
	missedDelete = router.VIPReport{Prefix: p4, Expected: router.Absent, InTable: true, Problem: "interface false, bird table true"}
	// noDirect: BIRD cannot take the address: not a missed notification.
	noDirect = router.VIPReport{Prefix: p4, Expected: router.Present, OnInterface: true, Problem: "no direct protocol up"}
	// sessionDown: in the table, carried by no session.
	sessionDown = router.VIPReport{Prefix: p4, Expected: router.Present, OnInterface: true, InTable: true, DirectUp: true, Problem: "no Established BGP session carries it"}
	unmanaged   = router.VIPReport{Prefix: p4, Expected: router.Unmanaged, OnInterface: true, InTable: true, Problem: "exported"}
)

// record is what Step leaves for r checked at now, with the story fields
// given after it.
func record(r router.VIPReport, changedAt, now time.Time) VIP {
	return VIP{Expected: r.Expected, Agrees: r.Agrees, Problem: r.Problem, InTable: r.InTable, Exported: r.Exported, CheckedAt: now, changedAt: changedAt}
}

func TestStep(t *testing.T) {
	type tc struct {
		name      string
		prev      VIP
		r         router.VIPReport
		changedAt time.Time
		ifaceDown bool
		now       time.Time
		want      func(v VIP) VIP // from record(r, changedAt, now)
		action    Action
	}
	agreedAt := func(v VIP) VIP { v.agreed = true; return v }
	tests := []tc{
		{name: "agrees after a change: the latency from the change",
			r: agreesPresent, changedAt: t0, now: at(40 * time.Millisecond),
			want: func(v VIP) VIP { v.Latency = 40 * time.Millisecond; return agreedAt(v) }},
		{name: "agrees, never changed: no latency",
			r: agreesPresent, now: t0, want: agreedAt},
		{name: "agrees again: the latency is kept, not measured again",
			prev: VIP{changedAt: t0, agreed: true, Latency: 40 * time.Millisecond}, r: agreesPresent, changedAt: t0, now: at(time.Hour),
			want: func(v VIP) VIP { v.Latency = 40 * time.Millisecond; return agreedAt(v) }},
		{name: "a later disagreement ends: the latency from its start",
			prev: VIP{changedAt: t0, agreed: true, DisagreeingSince: at(time.Hour)}, r: agreesPresent, changedAt: t0, now: at(time.Hour + 700*time.Millisecond),
			want: func(v VIP) VIP { v.Latency = 700 * time.Millisecond; return agreedAt(v) }},
		{name: "the first disagreement after a change: its start, within the grace",
			r: sessionDown, changedAt: t0, now: at(time.Second),
			want: func(v VIP) VIP { v.DisagreeingSince = at(time.Second); return v }},
		{name: "disagrees past the grace: reported",
			prev: VIP{changedAt: t0, DisagreeingSince: t0}, r: sessionDown, changedAt: t0, now: at(Grace),
			want:   func(v VIP) VIP { v.DisagreeingSince, v.warned = t0, true; return v },
			action: Action{Note: Disagrees, For: Grace}},
		{name: "the grace counts from the disagreement's start when it came after the change",
			prev: VIP{changedAt: t0, DisagreeingSince: at(time.Second)}, r: sessionDown, changedAt: t0, now: at(Grace),
			want: func(v VIP) VIP { v.DisagreeingSince = at(time.Second); return v }},
		{name: "after BIRD agreed, the grace counts from the disagreement",
			prev: VIP{changedAt: t0, agreed: true, DisagreeingSince: at(time.Hour)}, r: sessionDown, changedAt: t0, now: at(time.Hour + Grace - time.Millisecond),
			want: func(v VIP) VIP { v.DisagreeingSince = at(time.Hour); return agreedAt(v) }},
		{name: "reported once",
			prev: VIP{changedAt: t0, DisagreeingSince: t0, warned: true}, r: sessionDown, changedAt: t0, now: at(time.Minute),
			want: func(v VIP) VIP { v.DisagreeingSince, v.warned = t0, true; return v }},
		{name: "a reported disagreement ends: said, with its length",
			prev: VIP{changedAt: t0, DisagreeingSince: at(time.Second), warned: true}, r: agreesPresent, changedAt: t0, now: at(7 * time.Second),
			want:   func(v VIP) VIP { v.Latency = 7 * time.Second; return agreedAt(v) },
			action: Action{Note: AgreesAgain, For: 6 * time.Second}},
		{name: "a new change starts a new story; renewals keep counting",
			prev: VIP{changedAt: t0, DisagreeingSince: t0, warned: true, tries: 2, gaveUp: true, Renewed: 2}, r: sessionDown, changedAt: at(time.Hour), now: at(time.Hour),
			want: func(v VIP) VIP { v.DisagreeingSince, v.Renewed = at(time.Hour), 2; return v }},
		{name: "a missed delete, before RenewAfter: wait",
			prev: VIP{changedAt: t0, DisagreeingSince: t0}, r: missedDelete, changedAt: t0, now: at(RenewAfter - time.Millisecond),
			want: func(v VIP) VIP { v.DisagreeingSince = t0; return v }},
		{name: "a missed delete, at RenewAfter: renew",
			prev: VIP{changedAt: t0, DisagreeingSince: t0}, r: missedDelete, changedAt: t0, now: at(RenewAfter),
			want:   func(v VIP) VIP { v.DisagreeingSince = t0; return v },
			action: Action{Renewal: Renew}},
		{name: "a missed add: renew",
			prev: VIP{changedAt: t0, DisagreeingSince: t0}, r: missedAdd, changedAt: t0, now: at(RenewAfter),
			want:   func(v VIP) VIP { v.DisagreeingSince = t0; return v },
			action: Action{Renewal: Renew}},
		{name: "the interface down: no renewal",
			prev: VIP{changedAt: t0, DisagreeingSince: t0}, r: missedAdd, changedAt: t0, ifaceDown: true, now: at(RenewAfter),
			want: func(v VIP) VIP { v.DisagreeingSince = t0; return v }},
		{name: "no direct protocol up: no renewal",
			prev: VIP{changedAt: t0, DisagreeingSince: t0}, r: noDirect, changedAt: t0, now: at(RenewAfter),
			want: func(v VIP) VIP { v.DisagreeingSince = t0; return v }},
		{name: "a session down: no renewal",
			prev: VIP{changedAt: t0, DisagreeingSince: t0}, r: sessionDown, changedAt: t0, now: at(RenewAfter),
			want: func(v VIP) VIP { v.DisagreeingSince = t0; return v }},
		{name: "an unmanaged address: no renewal",
			prev: VIP{DisagreeingSince: t0}, r: unmanaged, now: at(RenewAfter),
			want: func(v VIP) VIP { v.DisagreeingSince = t0; return v }},
		{name: "the second renewal",
			prev: VIP{changedAt: t0, DisagreeingSince: at(RenewAfter), tries: 1, Renewed: 1}, r: missedAdd, changedAt: t0, now: at(2 * RenewAfter),
			want:   func(v VIP) VIP { v.DisagreeingSince, v.tries, v.Renewed = at(RenewAfter), 1, 1; return v },
			action: Action{Renewal: Renew}},
		{name: "renewals ran out: give up, said once",
			prev: VIP{changedAt: t0, DisagreeingSince: t0, tries: MaxRenewals, Renewed: MaxRenewals}, r: missedAdd, changedAt: t0, now: at(RenewAfter),
			want: func(v VIP) VIP {
				v.DisagreeingSince, v.tries, v.Renewed, v.gaveUp = t0, MaxRenewals, MaxRenewals, true
				return v
			},
			action: Action{Renewal: GiveUp}},
		{name: "given up: silent",
			prev: VIP{changedAt: t0, DisagreeingSince: t0, tries: MaxRenewals, Renewed: MaxRenewals, gaveUp: true, warned: true}, r: missedAdd, changedAt: t0, now: at(time.Minute),
			want: func(v VIP) VIP {
				v.DisagreeingSince, v.tries, v.Renewed, v.gaveUp, v.warned = t0, MaxRenewals, MaxRenewals, true, true
				return v
			}},
		{name: "agreeing ends the renewals' story",
			prev: VIP{changedAt: t0, DisagreeingSince: t0, tries: MaxRenewals, Renewed: MaxRenewals, gaveUp: true, warned: true}, r: agreesPresent, changedAt: t0, now: at(time.Minute),
			want:   func(v VIP) VIP { v.Latency, v.Renewed = time.Minute, MaxRenewals; return agreedAt(v) },
			action: Action{Note: AgreesAgain, For: time.Minute}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, action := Step(tc.prev, tc.r, tc.changedAt, !tc.ifaceDown, tc.now)
			want := tc.want(record(tc.r, tc.changedAt, tc.now))
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(VIP{})); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if action != tc.action {
				t.Errorf("action = %+v, want %+v", action, tc.action)
			}
		})
	}
}

// TestRenewing: a renewal counts and restarts the disagreement's clock, so
// that the next renewal waits RenewAfter again.
func TestRenewing(t *testing.T) {
	v, a := Step(VIP{changedAt: t0, DisagreeingSince: t0}, missedAdd, t0, true, at(RenewAfter))
	if a.Renewal != Renew {
		t.Fatalf("action %+v, want a renewal", a)
	}
	v = v.Renewing(at(RenewAfter))
	if v.Renewed != 1 || v.tries != 1 || !v.DisagreeingSince.Equal(at(RenewAfter)) {
		t.Fatalf("after Renewing: %+v", v)
	}
	if _, a := Step(v, missedAdd, t0, true, at(2*RenewAfter-time.Millisecond)); a.Renewal != NoRenewal {
		t.Errorf("renewed again before RenewAfter: %+v", a)
	}
	renewals := 1
	now := at(RenewAfter)
	for range 5 {
		now = now.Add(RenewAfter)
		var a Action
		v, a = Step(v, missedAdd, t0, true, now)
		if a.Renewal == Renew {
			v = v.Renewing(now)
			renewals++
		}
	}
	if renewals != MaxRenewals || v.Renewed != MaxRenewals {
		t.Errorf("%d renewals (%d counted), want %d", renewals, v.Renewed, MaxRenewals)
	}
}
