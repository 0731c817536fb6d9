package daemon

import (
	"context"
	"net/netip"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/confirm"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/status"
)

// Confirmer asks BIRD whether it agrees with what rhi wants announced;
// verify.Socket satisfies it. Check returns within ctx and reports an
// unreachable BIRD in Report.Err.
type Confirmer interface {
	Check(ctx context.Context, in router.Input) router.Report
}

// The loop's confirmation timing: see package confirm.
const (
	confirmEvery = confirm.Every
	confirmRetry = confirm.Retry
)

// confirmJob is what the loop hands the confirmer.
type confirmJob = confirm.Job

// confirmer wires the confirm goroutine into the loop: the loop submits
// jobs to it; the addresses to renew come back through the renew function
// (the loop's renewals channel).
type confirmer struct {
	*confirm.Runner
	check Confirmer
	jobs  chan confirmJob
}

func newConfirmer(c Confirmer, socket string, log logrus.FieldLogger, now func() time.Time, renew func(map[netip.Prefix]bool)) *confirmer {
	return &confirmer{Runner: confirm.New(c, socket, log, now, renew), check: c, jobs: make(chan confirmJob, 1)}
}

// submit hands over a job without blocking; a job not yet taken is replaced
// by the newer one, which holds the same VIPs in a newer state.
func (c *confirmer) submit(j confirmJob) {
	offerLatest(c.jobs, j)
}

func (c *confirmer) run(ctx context.Context) { c.Run(ctx, c.jobs) }

func (c *confirmer) once(ctx context.Context, j confirmJob) bool { return c.Once(ctx, j) }

// results is BIRD's status, as /status shows it, and the per-VIP records
// of the confirmer's last check. With wireConfirm, it is where confirm's
// results become the status wire: the conversion of the whole fails to
// build when the two drift apart.
func (c *confirmer) results() (status.BirdStatus, confirm.Records) {
	st, rs := c.Results()
	return status.BirdStatus(st), rs
}

// wireConfirm is what BIRD said of one VIP, as /status shows it.
func wireConfirm(v confirm.VIP) *status.VIPConfirm {
	return &status.VIPConfirm{
		Expected: v.Expected, Agrees: v.Agrees, LastResort: v.LastResort, Stale: v.Stale,
		Problem: v.Problem, InTable: v.InTable, Exported: v.Exported, CheckedAt: v.CheckedAt,
		Latency: v.Latency, DisagreeingSince: v.DisagreeingSince, Renewed: v.Renewed,
	}
}
