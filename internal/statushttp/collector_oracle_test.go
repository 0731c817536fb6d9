// The oracle of collector.go: the pre-issue-15 collector, verbatim.

package statushttp

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rhi-daemon/rhi/internal/decide"

	"github.com/rhi-daemon/rhi/internal/status"
)

var (
	descVIPDesired = prometheus.NewDesc("rhi_vip_desired",
		"1 if rhi wants the VIP announced (health, hysteresis and policy).", []string{"vip"}, nil)
	descVIPDrained = prometheus.NewDesc("rhi_vip_drained",
		"1 if the operator drained the VIP (rhi drain).", []string{"vip"}, nil)
	descDrainError = prometheus.NewDesc("rhi_drain_file_error",
		"1 if the drain file could not be read (the drains already in force are kept).", nil, nil)
	descVIPOnIface = prometheus.NewDesc("rhi_vip_on_interface",
		"1 if the VIP is on the interface.", []string{"vip"}, nil)
	descVIPPolicy = prometheus.NewDesc("rhi_vip_failure_policy_active",
		"1 if the failure policy decides the VIP (max_failed_polls reached).", []string{"vip"}, nil)
	descVIPFailed = prometheus.NewDesc("rhi_vip_failed_polls",
		"Consecutive polls that could not settle the VIP.", []string{"vip"}, nil)
	descVIPTransitions = prometheus.NewDesc("rhi_vip_transitions_total",
		"Changes of the VIP's desired state since start.", []string{"vip"}, nil)
	descUpstream = prometheus.NewDesc("rhi_upstream_verdict",
		"1 for the upstream's verdict in the last poll (up, down, no_checker, not_found, failed), 0 for the others.", []string{"upstream", "verdict"}, nil)
	descPolls = prometheus.NewDesc("rhi_polls_total",
		"Polls of the control API.", nil, nil)
	descFailedPolls = prometheus.NewDesc("rhi_failed_polls_total",
		"Polls in which at least one upstream could not be read.", nil, nil)
	descConsecutive = prometheus.NewDesc("rhi_consecutive_failed_polls",
		"Polls in a row in which at least one upstream could not be read.", nil, nil)
	descIfaceUp = prometheus.NewDesc("rhi_interface_up",
		"1 if the VIP interface exists and is administratively up.", []string{"iface"}, nil)
	descReady = prometheus.NewDesc("rhi_ready",
		"1 while /healthz answers 200: the loop turns, the interface takes writes, polls settle VIPs.", nil, nil)
	descDryRun = prometheus.NewDesc("rhi_dry_run",
		"1 if rhi runs with --dry-run and changes nothing on the interface.", nil, nil)
	descWriteErrors = prometheus.NewDesc("rhi_interface_write_errors_total",
		"Interface writes (one per tick or repair) that failed.", nil, nil)
	descLastSettled = prometheus.NewDesc("rhi_last_settled_poll_timestamp_seconds",
		"When a poll last settled at least one VIP (Unix time); 0 if none has since start.", nil, nil)
	descBirdUp = prometheus.NewDesc("rhi_bird_up",
		"1 if the last confirmation could talk to BIRD.", nil, nil)
	descBirdAgrees = prometheus.NewDesc("rhi_vip_bird_agrees",
		"1 if BIRD's table and exports matched the VIP's desired state in the last confirmation.", []string{"vip"}, nil)
	descBirdLatency = prometheus.NewDesc("rhi_vip_bird_confirm_seconds",
		"How long after the VIP's last change BIRD was first seen to agree; only for VIPs BIRD agrees with.", []string{"vip"}, nil)
	descBirdRenewed = prometheus.NewDesc("rhi_vip_bird_renewals_total",
		"Address renewals done because BIRD missed a change.", []string{"vip"}, nil)
	descBGP = prometheus.NewDesc("rhi_bgp_established",
		"1 if the selected BGP protocol is Established; absent while BIRD cannot be asked.", []string{"protocol"}, nil)
	descUnmanaged = prometheus.NewDesc("rhi_unmanaged_addresses",
		"Host addresses on the VIP interface that are neither configured nor owned by rhi: announced without a health check.", []string{"iface"}, nil)
	descUnmanagedAddr = prometheus.NewDesc("rhi_unmanaged_address",
		"1 for each host address on the VIP interface that is neither configured nor owned by rhi.", []string{"iface", "address"}, nil)
	descUpstreamHealthy = prometheus.NewDesc("rhi_upstream_healthy_nodes",
		"Healthy nodes of the upstream in the last poll (healthy and mostly healthy).", []string{"upstream"}, nil)
	descUpstreamNodes = prometheus.NewDesc("rhi_upstream_nodes",
		"Nodes counted for the upstream in the last poll (nodes pending purge left out).", []string{"upstream"}, nil)
	descProbeSuccess = prometheus.NewDesc("rhi_probe_success",
		"1 if the VIP's data-path probe was up in the last poll; only for VIPs with a probe.", []string{"vip"}, nil)
	descProbeDuration = prometheus.NewDesc("rhi_probe_duration_seconds",
		"Latency of the VIP's data-path probe in the last poll; only for VIPs with a probe.", []string{"vip"}, nil)
	descRecordError = prometheus.NewDesc("rhi_ownership_record_error",
		"1 while the ownership record (state_file) cannot be written.", nil, nil)
	descVIPDegraded = prometheus.NewDesc("rhi_vip_degraded",
		"1 if rhi wants the VIP announced degraded (from the degraded interface, with a longer AS path).", []string{"vip"}, nil)
	descViewUnknown = prometheus.NewDesc("rhi_fail_open_view_unknown",
		"1 while the fail-open guard's view of the other sites is unknown (BIRD cannot be asked, no session with ADD-PATH): no VIP whose health fails is withdrawn; absent while the guard is off.", nil, nil)
	descVIPDraining = prometheus.NewDesc("rhi_vip_draining",
		"1 while a drain or a withdrawing stop keeps the VIP in last resort for its drain_grace, before withdrawing it.", []string{"vip"}, nil)
	descVIPDrainDeadline = prometheus.NewDesc("rhi_vip_drain_deadline_seconds",
		"When the VIP's drain_grace ends (Unix time); only while it is draining.", []string{"vip"}, nil)
	descLastResortMissing = prometheus.NewDesc("rhi_fail_open_last_resort_missing",
		"1 while the fail-open guard is on and last_resort.interface does not exist: the last-resort tier is unavailable, and a VIP whose health fails stays where it is; absent while the guard is off.", nil, nil)
	descVIPFailOpen = prometheus.NewDesc("rhi_vip_fail_open",
		"1 while the fail-open guard keeps the VIP announced in last resort although its health fails; absent while the guard is off.", []string{"vip"}, nil)
)

// pollingDescs are the polling families, added with the poll budget.
var pollingDescs = func() map[string]*prometheus.Desc {
	m := map[string]*prometheus.Desc{}
	for _, f := range []family{famInterval, famEffective, famPollCost, famCostTotal, famFastPolls, famMoving, famChecks} {
		m[f.name] = prometheus.NewDesc(f.name, f.help, nil, nil)
	}
	return m
}()

// constCollector is a plain client_golang collector, kept as the
// oracle of the text the collector writes: client_golang const metrics,
// gathered and encoded by expfmt. Its code is unchanged but for its name.
type constCollector struct {
	src status.Source
	now func() time.Time
}

func (c *constCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descVIPDesired, descVIPOnIface, descVIPPolicy, descVIPFailed,
		descVIPTransitions, descUpstream, descPolls, descFailedPolls, descConsecutive, descIfaceUp, descReady,
		descDryRun, descWriteErrors, descLastSettled,
		descVIPDrained, descVIPDraining, descVIPDrainDeadline, descDrainError, descBirdUp, descBirdAgrees, descBirdLatency, descBirdRenewed, descBGP,
		descUnmanaged, descUnmanagedAddr, descRecordError, descVIPDegraded, descVIPFailOpen, descViewUnknown, descLastResortMissing,
		descUpstreamHealthy, descUpstreamNodes, descProbeSuccess, descProbeDuration} {
		ch <- d
	}
	for _, d := range pollingDescs {
		ch <- d
	}
}

func (c *constCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Status()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descReady, b2f(status.Judge(s, c.now()) == nil))
	gauge(descDryRun, b2f(s.DryRun))
	if !s.Ready {
		return
	}
	ch <- prometheus.MustNewConstMetric(descWriteErrors, prometheus.CounterValue, float64(s.Interface.WriteErrors))
	settled := 0.0
	if !s.ControlAPI.LastSettled.IsZero() {
		settled = float64(s.ControlAPI.LastSettled.UnixMilli()) / 1e3
	}
	gauge(descLastSettled, settled)
	ch <- prometheus.MustNewConstMetric(descPolls, prometheus.CounterValue, float64(s.ControlAPI.Polls))
	ch <- prometheus.MustNewConstMetric(descFailedPolls, prometheus.CounterValue, float64(s.ControlAPI.FailedPolls))
	gauge(descConsecutive, float64(s.ControlAPI.ConsecutiveFailedPolls))
	// The polling families, added with the poll budget.
	pol := s.ControlAPI.Polling
	for _, m := range []struct {
		f   family
		v   float64
		typ prometheus.ValueType
	}{
		{famInterval, s.ControlAPI.PollInterval.Seconds(), prometheus.GaugeValue},
		{famEffective, max(s.ControlAPI.PollInterval, pol.EffectiveInterval).Seconds(), prometheus.GaugeValue},
		{famPollCost, pol.PollCost.Seconds(), prometheus.GaugeValue},
		{famCostTotal, pol.CostTotal.Seconds(), prometheus.CounterValue},
		{famFastPolls, float64(pol.FastPolls), prometheus.CounterValue},
		{famMoving, float64(pol.Moving), prometheus.GaugeValue},
		{famChecks, float64(pol.ListEntries), prometheus.GaugeValue},
	} {
		ch <- prometheus.MustNewConstMetric(pollingDescs[m.f.name], m.typ, m.v)
	}
	gauge(descIfaceUp, b2f(s.Interface.Exists && s.Interface.Up), s.Interface.Name)
	gauge(descDrainError, b2f(s.Drain.Error != ""))
	gauge(descUnmanaged, float64(len(s.Interface.Unmanaged)), s.Interface.Name)
	for _, a := range s.Interface.Unmanaged {
		gauge(descUnmanagedAddr, 1, s.Interface.Name, a)
	}
	gauge(descRecordError, b2f(s.Interface.RecordError != ""))
	if s.FailOpen != nil {
		gauge(descViewUnknown, b2f(!s.FailOpen.Known))
		gauge(descLastResortMissing, b2f(!s.FailOpen.LastResortExists))
	}
	if s.Bird.Enabled && !s.Bird.LastCheck.IsZero() {
		gauge(descBirdUp, b2f(s.Bird.Error == ""))
		if s.Bird.Error == "" { // else Protocols is what BIRD said before it went away
			for _, p := range s.Bird.Protocols {
				gauge(descBGP, b2f(p.Established), p.Name)
			}
		}
	}
	seen := map[string]bool{}
	for _, v := range s.VIPs {
		if b := v.Bird; b != nil {
			if !b.Stale { // BIRD unreachable since: rhi_bird_up says so, agreement is unknown
				gauge(descBirdAgrees, b2f(b.Agrees), v.Address)
				if b.Agrees && b.Latency > 0 { // a latency is measured only when BIRD agrees
					gauge(descBirdLatency, b.Latency.Seconds(), v.Address)
				}
			}
			ch <- prometheus.MustNewConstMetric(descBirdRenewed, prometheus.CounterValue, float64(b.Renewed), v.Address)
		}
		gauge(descVIPDesired, b2f(v.Desired), v.Address)
		gauge(descVIPOnIface, b2f(v.OnInterface), v.Address)
		gauge(descVIPDrained, b2f(v.Drained), v.Address)
		gauge(descVIPDraining, b2f(v.DrainPhase == "draining" || v.DrainPhase == "stopping"), v.Address)
		if !v.DrainDeadline.IsZero() {
			gauge(descVIPDrainDeadline, float64(v.DrainDeadline.UnixNano())/1e9, v.Address)
		}
		gauge(descVIPDegraded, b2f(v.Tier == decide.TierDegraded), v.Address)
		gauge(descVIPPolicy, b2f(v.Reason == decide.ReasonPolicyWithdraw || v.Reason == decide.ReasonPolicyAnnounce), v.Address)
		gauge(descVIPFailed, float64(v.FailedPolls), v.Address)
		if v.FailOpen != nil {
			gauge(descVIPFailOpen, b2f(v.Tier == decide.TierLastResort), v.Address)
		}
		ch <- prometheus.MustNewConstMetric(descVIPTransitions, prometheus.CounterValue, float64(v.Transitions), v.Address)
		for _, u := range v.Upstreams {
			if seen[u.Key] {
				continue // shared by several VIPs: one series
			}
			seen[u.Key] = true
			for _, name := range verdicts {
				gauge(descUpstream, b2f(u.Verdict == name), u.Key, name)
			}
			gauge(descUpstreamHealthy, float64(u.Healthy), u.Key)
			gauge(descUpstreamNodes, float64(u.Nodes), u.Key)
		}
		if p := v.Probe; p != nil {
			gauge(descProbeSuccess, b2f(p.Result == "up"), v.Address)
			gauge(descProbeDuration, p.LatencySeconds, v.Address)
		}
	}
}
