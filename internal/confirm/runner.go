package confirm

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/router"
)

// Checker asks BIRD whether it agrees with in; verify.Socket satisfies it.
// Check returns within ctx and reports an unreachable BIRD in Report.Err.
type Checker interface {
	Check(ctx context.Context, in router.Input) router.Report
}

// Job is what the loop hands the runner: the expected state of every owned
// VIP and when it last changed.
type Job struct {
	In router.Input
	// ChangedAt is when each VIP of In last changed, in In.VIPs' order
	// (zero: not known); the daemon's loop fills it, a slice rather than
	// a map of 10,000 entries per job. Changed, keyed by
	// prefix, is read for a VIP that ChangedAt does not cover.
	ChangedAt []time.Time
	Changed   map[netip.Prefix]time.Time
	// IfaceUp is false when the interface is down or missing: BIRD then
	// has no route for any VIP, rightly, and no renewal can help.
	IfaceUp bool
}

// changed is when the VIP p, the i-th of the report, last changed: from
// ChangedAt when the report's i-th VIP is the job's i-th (verify.Check
// keeps In's order), else from Changed.
func (j *Job) changed(i int, p netip.Prefix) time.Time {
	if i < len(j.ChangedAt) && i < len(j.In.VIPs) && j.In.VIPs[i].Prefix == p {
		return j.ChangedAt[i]
	}
	return j.Changed[p]
}

// Runner runs checks on its own goroutine so a slow or stalled BIRD never
// delays the poll loop, and keeps what the last one said for Snapshot.
type Runner struct {
	check  Checker
	socket string
	log    logrus.FieldLogger
	now    func() time.Time
	renew  func(map[netip.Prefix]bool) // asks the loop to renew addresses

	mu     sync.Mutex
	status Status
	recs   Records // replaced, never changed: readers may keep it
	checks uint64  // checks recorded: Results changes only when it grows
	lastEr string
	estab  map[string]bool
}

// New returns a runner checking through check; socket names BIRD's control
// socket in logs and status. renew is handed the addresses to renew (true:
// present) and must not block.
func New(check Checker, socket string, log logrus.FieldLogger, now func() time.Time, renew func(map[netip.Prefix]bool)) *Runner {
	return &Runner{
		check: check, socket: socket, log: log, now: now, renew: renew,
		status: Status{Enabled: true, Socket: socket},
		estab:  map[string]bool{},
	}
}

// Run checks the latest job from jobs until ctx is done: once when it
// comes and, while BIRD does not agree on everything, again after Retry,
// doubling up to Every.
func (c *Runner) Run(ctx context.Context, jobs <-chan Job) {
	var job Job
	var have bool
	var retry *time.Timer
	var retryC <-chan time.Time
	backoff := Retry
	for {
		select {
		case <-ctx.Done():
			if retry != nil {
				retry.Stop()
			}
			return
		case job = <-jobs:
			have = true
			backoff = Retry
		case <-retryC:
		}
		retryC = nil
		if !have {
			continue
		}
		if c.Once(ctx, job) {
			// BIRD agrees on everything: wait for a change or the slow
			// timer, which bring a new job; this one is not read again
			// (at 10,000 VIPs it is ~1 MiB).
			job, have = Job{}, false
			continue
		}
		if retry == nil {
			retry = time.NewTimer(backoff)
		} else {
			retry.Reset(backoff)
		}
		retryC = retry.C
		backoff = min(2*backoff, Every)
	}
}

// Once runs one check of job and records it; it reports whether all is
// well (router.Report.Consistent), or that ctx ended.
func (c *Runner) Once(ctx context.Context, job Job) bool {
	cctx, cancel := context.WithTimeout(ctx, checkBudget)
	rep := c.check.Check(cctx, job.In)
	cancel()
	if ctx.Err() != nil {
		return true
	}
	return c.record(job, rep)
}

// record takes in the report of one check.
func (c *Runner) record(job Job, rep router.Report) bool {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks++
	c.status.LastCheck = now
	if rep.Err != nil {
		c.unreachable(rep.Err)
		return false
	}
	c.reachable(rep, now)
	if renew := c.step(job, rep, now); len(renew) > 0 {
		c.log.WithField("vips", len(renew)).Warn("BIRD missed address changes (netlink overflow?); renewing those addresses so the kernel tells it again")
		c.renew(renew)
	}
	return rep.Consistent()
}

// unreachable records a check that could not be made: what BIRD said
// before is stale. The error is logged when it changes.
func (c *Runner) unreachable(err error) {
	msg := err.Error()
	if msg != c.lastEr {
		c.log.WithField("socket", c.socket).WithError(err).Warn("cannot confirm through BIRD; the interface is still managed")
		c.lastEr = msg
	}
	c.status.Error = msg
	c.status.Protocols = nil // what BIRD said of its sessions then is not their state now
	c.recs = c.recs.stale()
}

// reachable records BIRD's answer about itself: its protocols and the
// problems of the whole set, each logged when it changes.
func (c *Runner) reachable(rep router.Report, now time.Time) {
	if c.lastEr != "" {
		c.log.WithField("socket", c.socket).Info("BIRD reachable again")
		c.lastEr = ""
	}
	c.status.Error = ""
	c.status.LastOK = now
	c.status.Protocols = rep.Protocols
	c.logProblems(rep.Problems)
	c.status.Problems = rep.Problems
	c.logSessions(rep.Protocols)
}

// logProblems logs problems of the whole set (no BGP protocol, no direct
// protocol for a family) once when they appear or go.
func (c *Runner) logProblems(problems []string) {
	if slices.Equal(problems, c.status.Problems) {
		return
	}
	for _, pr := range problems {
		if !slices.Contains(c.status.Problems, pr) {
			c.log.WithField("problem", pr).Error("BIRD cannot announce VIPs")
		}
	}
	if len(problems) == 0 {
		c.log.Info("BIRD problems cleared")
	}
}

// logSessions logs each selected protocol when it is first seen and when
// it comes up or goes down.
func (c *Runner) logSessions(protocols []router.ProtocolState) {
	for _, p := range protocols {
		if was, seen := c.estab[p.Name]; seen && was == p.Established {
			continue
		}
		e := c.log.WithFields(logrus.Fields{"protocol": p.Name, "bgp_state": p.BGPState, "state": p.State})
		if p.Established {
			e.Info("BGP session established")
		} else {
			e.WithField("info", p.Info).Warn("BGP session not established: VIPs are not announced through it")
		}
		c.estab[p.Name] = p.Established
	}
}

// step runs Step for every VIP of rep, logs their news grouped, and
// returns the renewals to ask for, at most RenewBatch. A VIP no longer
// checked is forgotten.
func (c *Runner) step(job Job, rep router.Report, now time.Time) map[netip.Prefix]bool {
	c.status.Agree, c.status.Disagree = 0, 0
	renew := map[netip.Prefix]bool{}
	var vlog vipLog // one line per problem, not one per VIP
	var shared exportsSeen
	prev := c.recs.Lookup()
	recs := make([]kept, 0, len(rep.VIPs))
	for i, r := range rep.VIPs {
		old, _ := prev(i, r.Prefix)
		v, a := Step(old, r, job.changed(i, r.Prefix), job.IfaceUp, now)
		if r.Agrees {
			c.status.Agree++
		} else {
			c.status.Disagree++
		}
		vlog.note(r, a)
		if a.Renewal == Renew && len(renew) < RenewBatch {
			renew[r.Prefix] = r.Expected == router.Present
			v = v.Renewing(now)
		}
		v.Exported = shared.intern(v.Exported)
		recs = append(recs, newKept(r.Prefix, v))
	}
	vlog.flush(c.log)
	c.recs = Records{recs: recs, checkedAt: now}
	return renew
}

// Snapshot returns BIRD's status and a copy of the per-VIP results. It is
// safe to call from any goroutine.
func (c *Runner) Snapshot() (Status, map[netip.Prefix]VIP) {
	st, rs := c.Results()
	vips := make(map[netip.Prefix]VIP, rs.Len())
	for i := range rs.Len() {
		vips[rs.Prefix(i)] = rs.VIP(i)
	}
	return st, vips
}

// Results returns BIRD's status and the per-VIP results, which are never
// changed: the caller may read them at leisure, without a copy. It is safe
// to call from any goroutine.
func (c *Runner) Results() (Status, Records) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status, c.recs
}

// Checks is the number of checks recorded so far: what Results returns
// changes only when it grows. It is safe to call from any goroutine.
func (c *Runner) Checks() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checks
}

// exportsSeen interns the exported maps of one report: nearly every VIP
// has one of very few (exported to every session, or to none), so the
// records share those instead of keeping a map each (2.5 MiB at 10,000
// VIPs). The maps are read, never changed, once in a record.
type exportsSeen []map[string]bool

// maxExportsSeen bounds the distinct maps kept for sharing.
const maxExportsSeen = 8

// intern returns a map equal to m seen before, or m.
func (e *exportsSeen) intern(m map[string]bool) map[string]bool {
	if m == nil {
		return nil
	}
	for _, s := range *e {
		if maps.Equal(s, m) {
			return s
		}
	}
	if len(*e) < maxExportsSeen {
		*e = append(*e, m)
	}
	return m
}
