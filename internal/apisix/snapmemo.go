package apisix

import (
	"math"
	"sync"

	"github.com/rhi-daemon/rhi/internal/health"
)

// snapMemo is the client's memory of its last snapshot of a plan: a steady
// poll, in which every resource says what it said the poll before, returns
// that snapshot again instead of a new map of every key (at 10,000 keys ~1
// MB of garbage and ~1–2 ms a poll, issue 15). Only PollPlan uses it: a
// plan is immutable, so the same plan is the same keys. A Failed result
// (its error differs from poll to poll: a deadline, a connection) is never
// reused; NoChecker and NotFound are when their error says the same. It
// keeps 12 bytes a resource on top of the snapshot, which the daemon keeps
// anyway (its last poll).
type snapMemo struct {
	mu   sync.Mutex
	plan *health.Plan // nil: nothing remembered
	snap health.Snapshot
	res  []memoResult   // by the plan's resource
	errs map[int]string // by the plan's resource, of those with an error
}

// memoResult is a Result packed, its error aside.
type memoResult struct {
	verdict        uint8
	err            bool
	healthy, total int32
}

// pack packs r, or reports that it cannot be remembered.
func pack(r *health.Result) (memoResult, bool) {
	ok := r.Verdict != health.Failed && r.Verdict >= 0 && r.Verdict <= math.MaxUint8 &&
		r.Healthy >= math.MinInt32 && r.Healthy <= math.MaxInt32 && r.Total >= math.MinInt32 && r.Total <= math.MaxInt32
	return memoResult{uint8(r.Verdict), r.Err != nil, int32(r.Healthy), int32(r.Total)}, ok
}

// reuse returns the snapshot remembered for plan if jobs, its resources'
// results, are those it was made of.
func (m *snapMemo) reuse(plan *health.Plan, jobs []job) (health.Snapshot, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.plan != plan || len(m.res) != len(jobs) {
		return nil, false
	}
	for j := range jobs {
		r := &jobs[j].res
		p, ok := pack(r)
		if !ok || p != m.res[j] || r.Err != nil && r.Err.Error() != m.errs[j] {
			return nil, false
		}
	}
	return m.snap, true
}

// remember keeps snap, made of jobs for plan, if every result can be
// remembered and no key is invalid (its error would be Failed); else it
// forgets.
func (m *snapMemo) remember(plan *health.Plan, jobs []job, snap health.Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.plan, m.snap, m.errs = nil, nil, nil
	if !plan.AllValid() {
		return
	}
	res := m.res[:0]
	var errs map[int]string
	for j := range jobs {
		r := &jobs[j].res
		p, ok := pack(r)
		if !ok {
			m.res = res[:0]
			return
		}
		if r.Err != nil {
			if errs == nil {
				errs = map[int]string{}
			}
			errs[j] = r.Err.Error()
		}
		res = append(res, p)
	}
	m.plan, m.snap, m.res, m.errs = plan, snap, res, errs
}
