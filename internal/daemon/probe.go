package daemon

import (
	"context"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/probe"
	"github.com/rhi-daemon/rhi/internal/status"
)

// ProbeSource sends the VIPs' data-path probes: one Result per
// spec, in order, bounded by ctx. probe.Prober is the real one; it sends one
// request per distinct target however many VIPs share it.
type ProbeSource interface {
	Probe(ctx context.Context, specs []probe.Spec) []probe.Result
}

// probes runs each poll's probes alongside the control-API poll and keeps
// what they said, per VIP of the config they ran for. The loop alone uses
// it.
type probes struct {
	src      ProbeSource
	specs    []probe.Spec   // scratch: the probes of this poll
	idx      []int          // scratch: the cfg.VIPs index of each of specs
	results  []probe.Result // per cfg.VIPs index; zero for a VIP without a probe
	outcomes []decide.Probe // per cfg.VIPs index, for decide.TickProbed
}

// start sends the probes of cfg's VIPs in the background, under timeout
// (the poll's deadline, apisix_timeout) and ctx, and returns a function
// that waits for them and files their results. With no probe configured it
// sends nothing and keeps no results (every VIP decides without a probe).
func (p *probes) start(ctx context.Context, cfg *config.Config, timeout time.Duration) (wait func()) {
	p.specs, p.idx = p.specs[:0], p.idx[:0]
	for i := range cfg.VIPs {
		if s := cfg.VIPs[i].Probe; s != nil {
			p.specs = append(p.specs, *s)
			p.idx = append(p.idx, i)
		}
	}
	if len(p.specs) == 0 { // p.src is never nil: New sets it
		// Nothing to keep: a config without probes costs no per-VIP slice.
		p.results, p.outcomes = p.results[:0], p.outcomes[:0]
		return func() {}
	}
	p.results = resize(p.results, len(cfg.VIPs))
	p.outcomes = resize(p.outcomes, len(cfg.VIPs))
	pctx, cancel := context.WithTimeout(ctx, timeout)
	done := make(chan []probe.Result, 1)
	go func() { done <- p.src.Probe(pctx, p.specs) }()
	return func() {
		res := <-done
		cancel()
		for j, i := range p.idx {
			var r probe.Result // a short answer counts as unreachable
			if j < len(res) {
				r = res[j]
			}
			p.results[i] = r
			p.outcomes[i] = outcomeOf(r.Outcome)
		}
	}
}

// outcomeOf is a probe's outcome in the decision's words.
func outcomeOf(o probe.Outcome) decide.Probe {
	switch o {
	case probe.Up:
		return decide.ProbeUp
	case probe.Down:
		return decide.ProbeDown
	}
	return decide.ProbeUnreachable
}

// resize returns s with length n and every element zero, reusing its array.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// probeStatus is a VIP's probe s and its last result r for /status.
func probeStatus(s probe.Spec, r probe.Result) *status.ProbeStatus {
	ps := &status.ProbeStatus{Target: s.String(), Result: r.Outcome.String(), Status: r.Status, LatencySeconds: r.Latency.Seconds()}
	if r.Err != nil {
		ps.Error = r.Err.Error()
	}
	return ps
}
