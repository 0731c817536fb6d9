package daemon

import (
	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// upstreamLog logs each upstream's verdict once per change, not once per
// poll. The loop alone uses it.
type upstreamLog struct {
	last map[string]health.Verdict // the last verdict logged, per key
}

// note logs the verdicts of snap for keys that changed since the last
// note, forgets keys snap no longer has (dropped by a reload), and returns
// how many upstreams of keys could not be read (failed or not found).
// policy says what an upstream without a health checker counts as, for
// the warning.
func (u *upstreamLog) note(log logrus.FieldLogger, keys []health.Upstream, snap health.Snapshot, policy config.FailurePolicy) (unreadable int) {
	if u.last == nil {
		u.last = map[string]health.Verdict{}
	}
	for _, up := range keys {
		k := up.Key
		r := snap[k]
		if r.Verdict == health.Failed || r.Verdict == health.NotFound {
			unreadable++
		}
		prev, seen := u.last[k]
		if seen && prev == r.Verdict {
			continue
		}
		u.last[k] = r.Verdict
		logVerdict(log, k, r, policy)
	}
	for k := range u.last {
		if _, ok := snap[k]; !ok {
			delete(u.last, k)
		}
	}
	return unreadable
}

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
