package confirm

import (
	"net/netip"
	"time"

	"github.com/rhi-daemon/rhi/internal/router"
)

// kept is a VIP as the runner keeps it between checks: 128 bytes with its
// prefix, where a map of VIP keyed by prefix took ~250 at 10,000 VIPs.
// CheckedAt is the check's, kept once in Records; changedAt is
// kept as the instant it names, which is all Step reads of it (Equal).
type kept struct {
	prefix           netip.Prefix
	disagreeingSince time.Time
	expected         router.Expectation
	problem          string
	exported         map[string]bool
	latency          time.Duration
	renewed          int
	changedSec       int64 // changedAt's Unix seconds
	changedNsec      int32 // and nanoseconds
	flags            keptFlags
	tries            uint8 // at most MaxRenewals
}

// keptFlags are the booleans of a kept record.
type keptFlags uint8

const (
	flagAgrees keptFlags = 1 << iota
	flagStale
	flagInTable
	flagWarned
	flagAgreed
	flagGaveUp
	flagLastResort
)

// flagOf is f if b, else none.
func flagOf(b bool, f keptFlags) keptFlags {
	if b {
		return f
	}
	return 0
}

// newKept is v, the VIP p, as the runner keeps it.
func newKept(p netip.Prefix, v VIP) kept {
	return kept{
		prefix: p, disagreeingSince: v.DisagreeingSince, expected: v.Expected, problem: v.Problem,
		exported: v.Exported, latency: v.Latency, renewed: v.Renewed,
		changedSec: v.changedAt.Unix(), changedNsec: int32(v.changedAt.Nanosecond()),
		flags: flagOf(v.Agrees, flagAgrees) | flagOf(v.Stale, flagStale) | flagOf(v.InTable, flagInTable) |
			flagOf(v.warned, flagWarned) | flagOf(v.agreed, flagAgreed) | flagOf(v.gaveUp, flagGaveUp) |
			flagOf(v.LastResort, flagLastResort),
		tries: uint8(min(max(v.tries, 0), 255)),
	}
}

// vip is the VIP r keeps, checked at checkedAt. Its changedAt is the same
// instant as the one recorded, without a location or a monotonic reading.
func (r *kept) vip(checkedAt time.Time) VIP {
	return VIP{
		Expected: r.expected, Agrees: r.flags&flagAgrees != 0, Stale: r.flags&flagStale != 0,
		LastResort: r.flags&flagLastResort != 0,
		Problem:    r.problem, InTable: r.flags&flagInTable != 0, Exported: r.exported,
		CheckedAt: checkedAt, Latency: r.latency, DisagreeingSince: r.disagreeingSince, Renewed: r.renewed,
		changedAt: time.Unix(r.changedSec, int64(r.changedNsec)),
		warned:    r.flags&flagWarned != 0, agreed: r.flags&flagAgreed != 0,
		tries: int(r.tries), gaveUp: r.flags&flagGaveUp != 0,
	}
}

// Records is what the last check that reached BIRD said of each VIP, in
// that check's order (the job's: the config's, then the orphans). It is
// never changed once made, so it may be read without the runner's lock.
type Records struct {
	recs      []kept
	checkedAt time.Time
}

// Len is the number of VIPs.
func (rs Records) Len() int { return len(rs.recs) }

// Prefix is the i-th VIP's prefix.
func (rs Records) Prefix(i int) netip.Prefix { return rs.recs[i].prefix }

// VIP is what the check said of the i-th VIP.
func (rs Records) VIP(i int) VIP { return rs.recs[i].vip(rs.checkedAt) }

// stale returns rs with every VIP marked stale: a copy, since rs may be
// read without the lock; rs itself when they all are already.
func (rs Records) stale() Records {
	all := true
	for i := range rs.recs {
		all = all && rs.recs[i].flags&flagStale != 0
	}
	if all {
		return rs
	}
	out := Records{recs: make([]kept, len(rs.recs)), checkedAt: rs.checkedAt}
	for i, r := range rs.recs {
		r.flags |= flagStale
		out.recs[i] = r
	}
	return out
}

// Lookup returns a function that finds the record of the VIP p, looking
// at position i first: a check in the order of the same config has it
// there. The first VIP that is not (after a reload) makes it index rs by
// prefix, once. A check names each prefix once (the config's VIPs are
// distinct, orphans are not among them).
func (rs Records) Lookup() func(i int, p netip.Prefix) (VIP, bool) {
	var index map[netip.Prefix]int
	return func(i int, p netip.Prefix) (VIP, bool) {
		if i >= 0 && i < len(rs.recs) && rs.recs[i].prefix == p {
			return rs.VIP(i), true
		}
		if index == nil {
			index = make(map[netip.Prefix]int, len(rs.recs))
			for k := range rs.recs {
				index[rs.recs[k].prefix] = k
			}
		}
		k, ok := index[p]
		if !ok {
			return VIP{}, false
		}
		return rs.VIP(k), true
	}
}
