package daemon

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/status"
	"github.com/rhi-daemon/rhi/internal/verify"
)

// Confirmer asks BIRD whether it agrees with what rhi wants announced;
// verify.Socket satisfies it. Check returns within ctx and reports an
// unreachable BIRD in Report.Err.
type Confirmer interface {
	Check(ctx context.Context, in verify.Input) verify.Report
}

// Confirmation timing. A change is confirmed at once and, while BIRD does
// not agree yet, again after confirmRetry, doubling up to confirmEvery; the
// slow timer confirms everything every confirmEvery regardless.
const (
	confirmEvery = 30 * time.Second
	confirmRetry = 200 * time.Millisecond
	// confirmGrace is how long BIRD may take to agree after a change
	// before rhi warns: it sees an address within milliseconds, the peer
	// gets the update within BGP's own pacing.
	confirmGrace = 5 * time.Second
	// renewAfter is how long a VIP may show a missed netlink notification
	// (on the interface but not in BIRD's table, or the reverse) before rhi
	// renews its address so that the kernel notifies BIRD again.
	renewAfter = 2 * time.Second
	// checkBudget bounds one whole confirmation.
	checkBudget = time.Minute
	// maxRenewals bounds the renewals of one disagreement. A notification
	// BIRD missed is heard after one renewal; an address BIRD still does
	// not see after two is not a missed notification (its direct protocol
	// does not cover the interface, say), and renewing it again would only
	// take a serving address down and up, for ever.
	maxRenewals = 2
	// renewBatch bounds the renewals one confirmation asks for, so that a
	// large batch BIRD missed is not replayed as one burst that overflows
	// its netlink socket again; the rest follow at the next confirmation.
	renewBatch = 100
)

// confirmJob is what the loop hands the confirmer: the expected state of
// every owned VIP and when it last changed.
type confirmJob struct {
	in      verify.Input
	changed map[netip.Prefix]time.Time
	// ifaceUp is false when the interface is down or missing: BIRD then
	// has no route for any VIP, rightly, and no renewal can help.
	ifaceUp bool
}

// vipRecord is the confirmer's record of one VIP: what /status shows of
// it and what the next check needs to judge the same change.
type vipRecord struct {
	status.VIPConfirm
	changedAt time.Time // the change this record is about
	warned    bool
	agreed    bool // BIRD agreed at least once since changedAt
	tries     int  // renewals of the current disagreement
	gaveUp    bool // tries ran out and that was logged
}

// missedNetlink reports the signature of a change BIRD did not hear about
// from the kernel: the address is where rhi wants it, BIRD's table is not.
// A present VIP missing from the table is that only while a direct protocol
// can take it from the interface (r.DirectUp).
func missedNetlink(r verify.VIPReport) bool {
	switch r.Expected {
	case verify.Present:
		return r.OnInterface && !r.InTable && r.DirectUp
	case verify.Absent:
		return !r.OnInterface && r.InTable
	}
	return false
}

// confirmer runs checks on its own goroutine so a slow or stalled BIRD never
// delays the poll loop.
type confirmer struct {
	check  Confirmer
	socket string
	log    logrus.FieldLogger
	now    func() time.Time
	renew  func(map[netip.Prefix]bool) // asks the loop to renew addresses

	jobs chan confirmJob

	mu     sync.Mutex
	status status.BirdStatus
	vips   map[netip.Prefix]vipRecord
	lastEr string
	estab  map[string]bool
}

func newConfirmer(c Confirmer, socket string, log logrus.FieldLogger, now func() time.Time, renew func(map[netip.Prefix]bool)) *confirmer {
	return &confirmer{
		check: c, socket: socket, log: log, now: now, renew: renew,
		jobs:   make(chan confirmJob, 1),
		status: status.BirdStatus{Enabled: true, Socket: socket},
		vips:   map[netip.Prefix]vipRecord{},
		estab:  map[string]bool{},
	}
}

// submit hands over a job without blocking; a job not yet taken is replaced
// by the newer one, which holds the same VIPs in a newer state.
func (c *confirmer) submit(j confirmJob) {
	offerLatest(c.jobs, j)
}

func (c *confirmer) run(ctx context.Context) {
	var job confirmJob
	var have bool
	var retry *time.Timer
	var retryC <-chan time.Time
	backoff := confirmRetry
	for {
		select {
		case <-ctx.Done():
			if retry != nil {
				retry.Stop()
			}
			return
		case job = <-c.jobs:
			have = true
			backoff = confirmRetry
		case <-retryC:
		}
		retryC = nil
		if !have {
			continue
		}
		if c.once(ctx, job) {
			continue // BIRD agrees on everything: wait for a change or the slow timer
		}
		if retry == nil {
			retry = time.NewTimer(backoff)
		} else {
			retry.Reset(backoff)
		}
		retryC = retry.C
		backoff = min(2*backoff, confirmEvery)
	}
}

// once runs one check and records it; it reports whether all is well.
func (c *confirmer) once(ctx context.Context, job confirmJob) bool {
	cctx, cancel := context.WithTimeout(ctx, checkBudget)
	rep := c.check.Check(cctx, job.in)
	cancel()
	if ctx.Err() != nil {
		return true
	}
	return c.record(job, rep)
}

func (c *confirmer) record(job confirmJob, rep verify.Report) bool {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status.LastCheck = now
	if rep.Err != nil {
		msg := rep.Err.Error()
		if msg != c.lastEr {
			c.log.WithField("socket", c.socket).WithError(rep.Err).Warn("cannot confirm through BIRD; the interface is still managed")
			c.lastEr = msg
		}
		c.status.Error = msg
		c.status.Protocols = nil // what BIRD said of its sessions then is not their state now
		for p, v := range c.vips {
			v.Stale = true
			c.vips[p] = v
		}
		return false
	}
	if c.lastEr != "" {
		c.log.WithField("socket", c.socket).Info("BIRD reachable again")
		c.lastEr = ""
	}
	c.status.Error = ""
	c.status.LastOK = now
	c.status.Protocols = rep.Protocols
	if !slices.Equal(rep.Problems, c.status.Problems) {
		// Problems of the whole set (no BGP protocol, no direct protocol
		// for a family): logged once when they appear or go.
		for _, pr := range rep.Problems {
			if !slices.Contains(c.status.Problems, pr) {
				c.log.WithField("problem", pr).Error("BIRD cannot announce VIPs")
			}
		}
		if len(rep.Problems) == 0 {
			c.log.Info("BIRD problems cleared")
		}
	}
	c.status.Problems = rep.Problems
	for _, p := range rep.Protocols {
		if was, seen := c.estab[p.Name]; !seen || was != p.Established {
			e := c.log.WithFields(logrus.Fields{"protocol": p.Name, "bgp_state": p.BGPState, "state": p.State})
			if p.Established {
				e.Info("BGP session established")
			} else {
				e.WithField("info", p.Info).Warn("BGP session not established: VIPs are not announced through it")
			}
			c.estab[p.Name] = p.Established
		}
	}
	ok := rep.ExitCode() == verify.ExitConsistent
	c.status.Agree, c.status.Disagree = 0, 0
	renew := map[netip.Prefix]bool{}
	var vlog vipLog // one line per problem, not one per VIP
	seen := make(map[netip.Prefix]bool, len(rep.VIPs))
	for _, r := range rep.VIPs {
		seen[r.Prefix] = true
		changed := job.changed[r.Prefix]
		prev, had := c.vips[r.Prefix]
		vc := vipRecord{VIPConfirm: status.VIPConfirm{
			Expected: r.Expected, Agrees: r.Agrees, Problem: r.Problem, InTable: r.InTable, Exported: r.Exported,
			CheckedAt: now, Renewed: prev.Renewed,
		}, changedAt: changed}
		sameChange := had && prev.changedAt.Equal(changed)
		if sameChange {
			vc.Latency = prev.Latency
			vc.warned = prev.warned
			vc.DisagreeingSince = prev.DisagreeingSince
			vc.agreed, vc.tries, vc.gaveUp = prev.agreed, prev.tries, prev.gaveUp
		}
		if r.Agrees {
			c.status.Agree++
			if vc.Latency == 0 && !changed.IsZero() {
				from := changed
				if vc.agreed && vc.DisagreeingSince.After(from) {
					from = vc.DisagreeingSince
				}
				vc.Latency = now.Sub(from)
			}
			if vc.warned {
				vlog.agrees(r, now.Sub(vc.DisagreeingSince))
			}
			vc.DisagreeingSince = time.Time{}
			vc.warned, vc.agreed, vc.tries, vc.gaveUp = false, true, 0, false
		} else {
			c.status.Disagree++
			vc.Latency = 0
			if vc.DisagreeingSince.IsZero() {
				vc.DisagreeingSince = now
			}
			since := changed
			if since.IsZero() || vc.DisagreeingSince.After(since) {
				since = vc.DisagreeingSince
			}
			if !vc.warned && now.Sub(since) >= confirmGrace {
				vlog.disagrees(r, now.Sub(since))
				vc.warned = true
			}
			if job.ifaceUp && missedNetlink(r) && now.Sub(vc.DisagreeingSince) >= renewAfter {
				switch {
				case vc.tries >= maxRenewals:
					if !vc.gaveUp {
						vlog.renewalsFailed(r)
						vc.gaveUp = true
					}
				case len(renew) < renewBatch:
					renew[r.Prefix] = r.Expected == verify.Present
					vc.Renewed++
					vc.tries++
					vc.DisagreeingSince = now // give the renewal its own grace
				}
			}
		}
		c.vips[r.Prefix] = vc
	}
	vlog.flush(c.log)
	for p := range c.vips {
		if !seen[p] {
			delete(c.vips, p)
		}
	}
	if len(renew) > 0 {
		c.log.WithField("vips", len(renew)).Warn("BIRD missed address changes (netlink overflow?); renewing those addresses so the kernel tells it again")
		c.renew(renew)
	}
	return ok
}

// snapshot returns BIRD's status and a copy of the per-VIP results.
func (c *confirmer) snapshot() (status.BirdStatus, map[netip.Prefix]status.VIPConfirm) {
	c.mu.Lock()
	defer c.mu.Unlock()
	vips := make(map[netip.Prefix]status.VIPConfirm, len(c.vips))
	for p, v := range c.vips {
		vips[p] = v.VIPConfirm
	}
	return c.status, vips
}
