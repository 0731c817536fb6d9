package daemon

import (
	"net/netip"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/status"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// view is what one tick leaves for Status; it is never mutated after publish.
type view struct {
	cfg        *config.Config
	snap       apisix.Snapshot
	vips       []vipRec // one per cfg.VIPs, in its order
	iface      vip.State
	ifaceErr   string
	tickStart  time.Time
	pollTook   time.Duration
	failedRun  int
	unreadable int
	polls      uint64
	failedAll  uint64
	orphans    []netip.Prefix // sorted; nil when there are none
	drained    drain.Set      // replaced, never mutated, by the loop
	drainErr   string
	ticked     bool
	writeErrs  uint64
	failWrites int
	unsettled  int
	settledAt  time.Time
	tickEnd    time.Time
	unmanaged  []netip.Prefix // sorted; shared with the loop, which replaces it
	recordErr  string
}

// vipRec is one VIP in a view: what the loop's maps say of it.
type vipRec struct {
	state decide.State
	since time.Time
	flips uint64
}

// status.Status renders the last tick's results. It is safe to call from any
// goroutine; before the first tick it reports Ready false.
func (d *Daemon) Status() status.Status {
	d.mu.RLock()
	defer d.mu.RUnlock() // publish reuses a view once no reader holds it
	v := d.view
	if v == nil || !v.ticked {
		return status.Status{SchemaVersion: status.SchemaVersion, DryRun: d.dryRun}
	}
	s := status.Status{
		SchemaVersion: status.SchemaVersion, Ready: true, DryRun: d.dryRun, LastTick: v.tickEnd,
		Interface: status.InterfaceStatus{
			Name: v.cfg.Interface, Exists: v.iface.Exists, Up: v.iface.Up,
			Error: v.ifaceErr, WriteErrors: v.writeErrs, FailedWrites: v.failWrites,
			RecordError: v.recordErr,
		},
		ControlAPI: status.APIStatus{
			URL: v.cfg.ControlURL, PollInterval: v.cfg.PollInterval, Timeout: v.cfg.Timeout,
			LastPoll: v.tickStart, PollDuration: v.pollTook,
			Upstreams: len(v.snap), ConsecutiveFailedPolls: v.failedRun,
			Polls: v.polls, FailedPolls: v.failedAll, Unreadable: v.unreadable,
			MaxFailedPolls: v.cfg.FailurePolicy.MaxFailedPolls, LastSettled: v.settledAt, UnsettledPolls: v.unsettled,
		},
	}
	s.Drain = status.DrainStatus{File: v.cfg.DrainFile, All: v.drained.All, Error: v.drainErr}
	var confirms map[netip.Prefix]status.VIPConfirm
	if d.conf != nil {
		s.Bird, confirms = d.conf.snapshot()
	}
	for _, p := range v.orphans {
		s.Interface.Withdrawing = append(s.Interface.Withdrawing, p.String())
	}
	for _, p := range v.unmanaged {
		s.Interface.Unmanaged = append(s.Interface.Unmanaged, p.String())
	}
	for _, p := range v.iface.Foreign {
		s.Interface.Foreign = append(s.Interface.Foreign, p.String())
	}
	for _, p := range v.iface.ForeignPeers {
		s.Interface.Foreign = append(s.Interface.Foreign, p.String()) // "10.9.0.1 peer 10.9.0.2/32"
	}
	s.VIPs = make([]status.VIPStatus, 0, len(v.cfg.VIPs))
	for i := range v.cfg.VIPs {
		c := &v.cfg.VIPs[i]
		rec := v.vips[i]
		st := rec.state
		vs := status.VIPStatus{
			Address: c.Address.String(), Description: c.Description, Condition: string(c.Condition),
			Verdict: st.Verdict, Reason: st.Reason, Desired: st.Announced && !v.drained.Has(c.Address),
			Drained:     v.drained.Has(c.Address),
			OnInterface: v.iface.Has(c.Address), Since: rec.since,
			FailedPolls: st.FailedPolls, Streak: st.Streak, Transitions: rec.flips,
		}
		if vc, ok := confirms[c.Address]; ok {
			vs.Bird = &vc
		}
		for _, k := range c.Upstreams {
			r := v.snap[k]
			us := status.UpstreamStatus{Key: k, Verdict: r.Verdict.String(), Healthy: r.Healthy, Nodes: r.Total}
			if r.Err != nil {
				us.Error = r.Err.Error()
			}
			vs.Upstreams = append(vs.Upstreams, us)
		}
		if vs.Drained {
			s.Drain.Count++
		}
		s.VIPs = append(s.VIPs, vs)
	}
	return s
}
