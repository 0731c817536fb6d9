package confirm

import (
	"time"

	"github.com/rhi-daemon/rhi/internal/router"
)

// Confirmation timing. A change is confirmed at once and, while BIRD does
// not agree yet, again after Retry, doubling up to Every; the slow timer
// confirms everything every Every regardless.
const (
	Every = 30 * time.Second
	Retry = 200 * time.Millisecond
	// Grace is how long BIRD may take to agree after a change before rhi
	// warns: it sees an address within milliseconds, the peer gets the
	// update within BGP's own pacing.
	Grace = 5 * time.Second
	// RenewAfter is how long a VIP may show a missed netlink notification
	// (on the interface but not in BIRD's table, or the reverse) before rhi
	// renews its address so that the kernel notifies BIRD again.
	RenewAfter = 2 * time.Second
	// MaxRenewals bounds the renewals of one disagreement. A notification
	// BIRD missed is heard after one renewal; an address BIRD still does
	// not see after two is not a missed notification (its direct protocol
	// does not cover the interface, say), and renewing it again would only
	// take a serving address down and up, for ever.
	MaxRenewals = 2
	// RenewBatch bounds the renewals one confirmation asks for, so that a
	// large batch BIRD missed is not replayed as one burst that overflows
	// its netlink socket again; the rest follow at the next confirmation.
	RenewBatch = 100
	// checkBudget bounds one whole confirmation.
	checkBudget = time.Minute
)

// Note is what a step has to tell the operator about one VIP.
type Note int

const (
	Quiet Note = iota
	// Disagrees: the VIP has disagreed for Action.For, past Grace, and
	// was not reported yet.
	Disagrees
	// AgreesAgain: a VIP reported disagreeing agrees now, after a
	// disagreement of Action.For.
	AgreesAgain
)

// Renewal is what a step asks for the VIP's address.
type Renewal int

const (
	NoRenewal Renewal = iota
	// Renew: the VIP shows a missed netlink notification; renew its
	// address, then record it with VIP.Renewing. A caller over its batch
	// renews nothing and records nothing: the next step asks again.
	Renew
	// GiveUp: MaxRenewals did not help; say so, once.
	GiveUp
)

// Action is what Step asks of its caller for one VIP.
type Action struct {
	Note    Note
	For     time.Duration // with Disagrees and AgreesAgain
	Renewal Renewal
}

// Step is one check of one VIP: prev is what the last check left (the zero
// VIP for the first), r what BIRD says now, changedAt when rhi last changed
// the VIP (zero: never), ifaceUp whether the interface exists and is up (a
// down link's routes are rightly gone: no renewal helps). It is pure.
func Step(prev VIP, r router.VIPReport, changedAt time.Time, ifaceUp bool, now time.Time) (VIP, Action) {
	v := VIP{
		Expected: r.Expected, Agrees: r.Agrees, Problem: r.Problem, InTable: r.InTable, Exported: r.Exported,
		CheckedAt: now, changedAt: changedAt, Renewed: prev.Renewed,
		LastResort: r.Tier == router.TierLastResort,
	}
	if prev.changedAt.Equal(changedAt) { // the same change: carry its story on
		v.Latency, v.warned, v.DisagreeingSince = prev.Latency, prev.warned, prev.DisagreeingSince
		v.agreed, v.tries, v.gaveUp = prev.agreed, prev.tries, prev.gaveUp
	}
	if r.Agrees {
		return v.agree(now)
	}
	return v.disagree(r, ifaceUp, now)
}

// agree ends a disagreement: the latency is measured once per change, from
// the change or, when BIRD agreed with it and then stopped, from when that
// later disagreement was first seen.
func (v VIP) agree(now time.Time) (VIP, Action) {
	var a Action
	if v.Latency == 0 && !v.changedAt.IsZero() {
		from := v.changedAt
		if v.agreed && v.DisagreeingSince.After(from) {
			from = v.DisagreeingSince
		}
		v.Latency = now.Sub(from)
	}
	if v.warned {
		a.Note, a.For = AgreesAgain, now.Sub(v.DisagreeingSince)
	}
	v.DisagreeingSince = time.Time{}
	v.warned, v.agreed, v.tries, v.gaveUp = false, true, 0, false
	return v, a
}

// disagree starts or continues a disagreement: it is reported once past
// Grace (from the change, or from its start when that is later), and a
// missed notification is renewed after RenewAfter, MaxRenewals times.
func (v VIP) disagree(r router.VIPReport, ifaceUp bool, now time.Time) (VIP, Action) {
	var a Action
	v.Latency = 0
	if v.DisagreeingSince.IsZero() {
		v.DisagreeingSince = now
	}
	since := v.changedAt
	if since.IsZero() || v.DisagreeingSince.After(since) {
		since = v.DisagreeingSince
	}
	if !v.warned && now.Sub(since) >= Grace {
		a.Note, a.For = Disagrees, now.Sub(since)
		v.warned = true
	}
	if !ifaceUp || !missedNetlink(r) || now.Sub(v.DisagreeingSince) < RenewAfter {
		return v, a
	}
	switch {
	case v.tries < MaxRenewals:
		a.Renewal = Renew
	case !v.gaveUp:
		a.Renewal = GiveUp
		v.gaveUp = true
	}
	return v, a
}

// Renewing records the renewal a Step asked for: it counts, and the
// renewal gets a grace of its own.
func (v VIP) Renewing(now time.Time) VIP {
	v.Renewed++
	v.tries++
	v.DisagreeingSince = now
	return v
}

// missedNetlink reports the signature of a change BIRD did not hear about
// from the kernel: the address is where rhi wants it, BIRD's table is not.
// A present VIP missing from the table is that only while a direct protocol
// can take it from the interface (r.DirectUp).
func missedNetlink(r router.VIPReport) bool {
	switch r.Expected {
	case router.Present:
		return r.OnInterface && !r.InTable && r.DirectUp
	case router.Absent:
		return !r.OnInterface && r.InTable
	}
	return false
}
