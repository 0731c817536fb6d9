package daemon

import (
	"slices"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// upstreamLog logs each upstream's verdict once per change, not once per
// poll. The loop alone uses it. It keeps the keys of the last note and,
// per key in that order, the verdict last logged: slices rather than a map
// keyed by the key, rebuilt when the keys change (a reload).
type upstreamLog struct {
	keys []health.Upstream // the plan's keys at the last note, shared with it
	// last is the verdict last logged per keys[i], a Verdict in a byte;
	// notLogged if none is.
	last []int8
	seen []bool // scratch: per resource of the plan, met in this note
}

// note logs the verdicts of snap for the plan's keys that changed since
// the last note, forgets keys snap no longer has (dropped by a reload), and
// returns how many of the plan's resources could not be read (failed or
// not found). Keys that name one resource (`/upstreams/1` and
// `/apisix/upstreams/1`) are one upstream: read once, logged and counted
// once, under the first key that names it. policy says what an upstream
// without a health checker counts as, for the warning. each, if not nil,
// is given every resource's reading (resource j, as plan numbers them,
// read under its first key), so that the caller need not look it up again.
func (u *upstreamLog) note(log logrus.FieldLogger, plan health.Plan, snap health.Snapshot, policy config.FailurePolicy, each func(j int, r health.Result)) (unreadable int) {
	keys := plan.Upstreams()
	u.rekey(keys)
	u.seen = resize(u.seen, plan.Resources())
	for i, up := range keys {
		j, res := plan.KeyResource(i)
		if res && u.seen[j] {
			continue // another spelling of a resource already noted
		}
		k := up.Key
		r, ok := snap[k]
		if res {
			u.seen[j] = true
			if each != nil {
				each(j, r)
			}
		}
		if r.Verdict == health.Failed || r.Verdict == health.NotFound {
			unreadable++
		}
		if u.last[i] == notLogged || health.Verdict(u.last[i]) != r.Verdict {
			logVerdict(log, k, r, policy)
		}
		u.last[i] = int8(r.Verdict)
		if !ok {
			u.last[i] = notLogged // a key snap lacks is forgotten
		}
	}
	return unreadable
}

// rekey makes keys the keys of the log, carrying over what was logged for
// those it had; a key it drops is forgotten. keys is a plan's list, never
// changed in place, so the log shares it: the same list is the same keys.
func (u *upstreamLog) rekey(keys []health.Upstream) {
	if len(keys) == len(u.keys) && (len(keys) == 0 || &keys[0] == &u.keys[0]) {
		return
	}
	if slices.EqualFunc(keys, u.keys, func(a, b health.Upstream) bool { return a.Key == b.Key }) {
		u.keys = keys
		return
	}
	was := make(map[string]int8, len(u.keys))
	for i, k := range u.keys {
		was[k.Key] = u.last[i]
	}
	u.keys = keys
	u.last = make([]int8, len(keys))
	for i, up := range keys {
		v, ok := was[up.Key]
		if !ok {
			v = notLogged
		}
		u.last[i] = v
	}
}

// notLogged is upstreamLog.last for a key with no verdict logged: no
// Verdict is negative.
const notLogged = -1

// logVerdict logs upstream k's new verdict r.
func logVerdict(log logrus.FieldLogger, k string, r health.Result, policy config.FailurePolicy) {
	e := log.WithFields(logrus.Fields{"upstream": k, "verdict": r.Verdict.String(), "healthy": r.Healthy, "nodes": r.Total})
	if r.Err != nil {
		e = e.WithError(r.Err)
	}
	switch r.Verdict {
	case health.Up, health.Down:
		e.Info("upstream health changed")
	case health.NoChecker:
		e.Warnf("upstream has no health checker; counted as %s", policy.NoChecker)
	default:
		e.Warn("upstream cannot be read; counted as a failed poll")
	}
}
