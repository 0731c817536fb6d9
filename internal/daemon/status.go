package daemon

import (
	"net/netip"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/drain"
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
	unmanaged  []netip.Prefix // sorted; shared with the loop, which replaces it
	recordErr  string
}

// vipRec is one VIP in a view: what the loop's maps say of it.
type vipRec struct {
	state decide.State
	since time.Time
	flips uint64
}

// Status is the daemon's state as /status and `rhi status` show it. Field
// names are part of the JSON contract.
type Status struct {
	Ready      bool            `json:"ready"`
	Interface  InterfaceStatus `json:"interface"`
	ControlAPI APIStatus       `json:"control_api"`
	Bird       BirdStatus      `json:"bird"`
	Drain      DrainStatus     `json:"drain"`
	VIPs       []VIPStatus     `json:"vips"`
}

// InterfaceStatus is what the last tick saw on the VIP interface.
type InterfaceStatus struct {
	Name   string `json:"name"`
	Exists bool   `json:"exists"`
	Up     bool   `json:"up"`
	Error  string `json:"error,omitempty"`
	// Foreign lists the addresses rhi does not own, point-to-point
	// entries as ip(8) prints them ("10.9.0.1 peer 10.9.0.2/32").
	Foreign []string `json:"foreign,omitempty"`
	// Withdrawing lists the VIPs dropped from the config by a reload that
	// are still on the interface: rhi owns them until they are gone.
	Withdrawing []string `json:"withdrawing,omitempty"`
	// Unmanaged lists the host addresses (/32, /128) on the interface
	// that are neither in the config nor in rhi's ownership record: BIRD
	// announces them without a health check. They are in Foreign too.
	Unmanaged []string `json:"unmanaged,omitempty"`
	// RecordError says why the ownership record (state_file) could not be
	// written, while it cannot.
	RecordError string `json:"record_error,omitempty"`
}

// DrainStatus is the operator's drain file as the daemon last read it.
type DrainStatus struct {
	File  string `json:"file"`
	All   bool   `json:"all,omitempty"`
	Count int    `json:"drained"` // configured VIPs drained
	Error string `json:"error,omitempty"`
}

// APIStatus is the health of the APISIX control API as the last poll saw it.
type APIStatus struct {
	URL                    string        `json:"url"`
	PollInterval           time.Duration `json:"poll_interval_ns"`
	Timeout                time.Duration `json:"timeout_ns"`
	LastPoll               time.Time     `json:"last_poll"`
	PollDuration           time.Duration `json:"poll_duration_ns"`
	Upstreams              int           `json:"upstreams"`
	Unreadable             int           `json:"unreadable"` // failed or not found in the last poll
	ConsecutiveFailedPolls int           `json:"consecutive_failed_polls"`
	Polls                  uint64        `json:"polls_total"`
	FailedPolls            uint64        `json:"failed_polls_total"`
}

// VIPStatus is one VIP: what rhi decided, why, and what the interface holds.
type VIPStatus struct {
	Address     string              `json:"address"`
	Description string              `json:"description,omitempty"`
	Condition   string              `json:"condition"`
	Verdict     decide.Availability `json:"verdict"`
	Reason      decide.Reason       `json:"reason"`
	Desired     bool                `json:"desired"`      // should be on the interface
	Drained     bool                `json:"drained"`      // withdrawn by the operator
	OnInterface bool                `json:"on_interface"` // is on the interface
	Since       time.Time           `json:"since"`        // last change of either
	FailedPolls int                 `json:"failed_polls"`
	Streak      int                 `json:"streak,omitempty"` // polls towards rise/fall
	Transitions uint64              `json:"transitions"`      // changes of Desired since start
	Upstreams   []UpstreamStatus    `json:"upstreams"`
	// Bird is BIRD's view of the VIP in the last confirmation; nil when
	// confirmation is off or has not run yet.
	Bird *VIPConfirm `json:"bird,omitempty"`
}

// UpstreamStatus is one upstream's verdict in the last poll.
type UpstreamStatus struct {
	Key     string `json:"key"`
	Verdict string `json:"verdict"`
	Healthy int    `json:"healthy"`
	Nodes   int    `json:"nodes"`
	Error   string `json:"error,omitempty"`
}

// Status renders the last tick's results. It is safe to call from any
// goroutine; before the first tick it reports Ready false.
func (d *Daemon) Status() Status {
	d.mu.RLock()
	defer d.mu.RUnlock() // publish reuses a view once no reader holds it
	v := d.view
	if v == nil || !v.ticked {
		return Status{}
	}
	s := Status{
		Ready: true,
		Interface: InterfaceStatus{
			Name: v.cfg.Interface, Exists: v.iface.Exists, Up: v.iface.Up,
			Error: v.ifaceErr, RecordError: v.recordErr,
		},
		ControlAPI: APIStatus{
			URL: v.cfg.ControlURL, PollInterval: v.cfg.PollInterval, Timeout: v.cfg.Timeout,
			LastPoll: v.tickStart, PollDuration: v.pollTook,
			Upstreams: len(v.snap), ConsecutiveFailedPolls: v.failedRun,
			Polls: v.polls, FailedPolls: v.failedAll, Unreadable: v.unreadable,
		},
	}
	s.Drain = DrainStatus{File: v.cfg.DrainFile, All: v.drained.All, Error: v.drainErr}
	var confirms map[netip.Prefix]VIPConfirm
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
	s.VIPs = make([]VIPStatus, 0, len(v.cfg.VIPs))
	for i := range v.cfg.VIPs {
		c := &v.cfg.VIPs[i]
		rec := v.vips[i]
		st := rec.state
		vs := VIPStatus{
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
			us := UpstreamStatus{Key: k, Verdict: r.Verdict.String(), Healthy: r.Healthy, Nodes: r.Total}
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
