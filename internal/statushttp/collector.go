package statushttp

import (
	"bufio"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/health"

	"github.com/rhi-daemon/rhi/internal/status"
)

// family is one metric family the collector writes in the text exposition
// format. labels are in the order they are written, sorted by name as
// client_golang writes them.
type family struct {
	name, help, typ string
	labels          []string
}

var (
	vipLabel      = []string{"vip"}
	upstreamLabel = []string{"upstream"}
)

// The families of the daemon's status that stay few whatever the number of
// VIPs.
var (
	famReady = family{"rhi_ready",
		"1 while /healthz answers 200: the loop turns, the interface takes writes, polls settle VIPs.", "gauge", nil}
	famDryRun = family{"rhi_dry_run",
		"1 if rhi runs with --dry-run and changes nothing on the interface.", "gauge", nil}
	famWriteErrors = family{"rhi_interface_write_errors_total",
		"Interface writes (one per tick or repair) that failed.", "counter", nil}
	famLastSettled = family{"rhi_last_settled_poll_timestamp_seconds",
		"When a poll last settled at least one VIP (Unix time); 0 if none has since start.", "gauge", nil}
	famPolls = family{"rhi_polls_total",
		"Polls of the control API.", "counter", nil}
	famFailedPolls = family{"rhi_failed_polls_total",
		"Polls in which at least one upstream could not be read.", "counter", nil}
	famConsecutive = family{"rhi_consecutive_failed_polls",
		"Polls in a row in which at least one upstream could not be read.", "gauge", nil}
	famInterval = family{"rhi_poll_interval_seconds",
		"apisix_poll_interval: the configured interval of the regular polls.", "gauge", nil}
	famEffective = family{"rhi_poll_interval_effective_seconds",
		"The regular polls' interval now: apisix_poll_interval, or longer while apisix_poll_budget stretches it; each poll comes a random 2-10 % of it early.", "gauge", nil}
	famPollCost = family{"rhi_poll_cost_seconds",
		"What the last regular poll took of APISIX's control-API time, measured request by request.", "gauge", nil}
	famCostTotal = family{"rhi_control_api_cost_seconds_total",
		"The control-API time of every request rhi sent (regular and fast polls), measured.", "counter", nil}
	famFastPolls = family{"rhi_fast_polls_total",
		"Fast polls: moving upstreams polled alone at fast_poll_interval.", "counter", nil}
	famMoving = family{"rhi_moving_upstreams",
		"Upstreams being fast-polled now (a node mostly_healthy or mostly_unhealthy, a node newly unhealthy, a probe that just failed).", "gauge", nil}
	famChecks = family{"rhi_apisix_checkers",
		"Entries of the last health-checker list read: the checkers APISIX holds, what a list costs it; 0 when the last poll read none.", "gauge", nil}
	famIfaceUp = family{"rhi_interface_up",
		"1 if the VIP interface exists and is administratively up.", "gauge", []string{"iface"}}
	famDrainError = family{"rhi_drain_file_error",
		"1 if the drain file could not be read (the drains already in force are kept).", "gauge", nil}
	famUnmanaged = family{"rhi_unmanaged_addresses",
		"Host addresses on the VIP interface that are neither configured nor owned by rhi: announced without a health check.", "gauge", []string{"iface"}}
	famUnmanagedAddr = family{"rhi_unmanaged_address",
		"1 for each host address on the VIP interface that is neither configured nor owned by rhi.", "gauge", []string{"address", "iface"}}
	famRecordError = family{"rhi_ownership_record_error",
		"1 while the ownership record (state_file) cannot be written.", "gauge", nil}
	famBirdUp = family{"rhi_bird_up",
		"1 if the last confirmation could talk to BIRD.", "gauge", nil}
	famViewUnknown = family{"rhi_fail_open_view_unknown",
		"1 while the fail-open guard's view of the other sites is unknown (BIRD cannot be asked, no session with ADD-PATH): no VIP whose health fails is withdrawn; absent while the guard is off.", "gauge", nil}
	famLastResortMissing = family{"rhi_fail_open_last_resort_missing",
		"1 while the fail-open guard is on and last_resort.interface does not exist: the last-resort tier is unavailable, and a VIP whose health fails stays where it is; absent while the guard is off.", "gauge", nil}
	famBGP = family{"rhi_bgp_established",
		"1 if the selected BGP protocol is Established; absent while BIRD cannot be asked.", "gauge", []string{"protocol"}}
)

// The families of upstreams, one series (or one per verdict) for each
// upstream, however many VIPs share it.
var (
	famUpstream = family{"rhi_upstream_verdict",
		"1 for the upstream's verdict in the last poll (up, down, no_checker, not_found, failed), 0 for the others.", "gauge", []string{"upstream", "verdict"}}
	famUpstreamHealthy = family{"rhi_upstream_healthy_nodes",
		"Healthy nodes of the upstream in the last poll (healthy and mostly healthy).", "gauge", upstreamLabel}
	famUpstreamNodes = family{"rhi_upstream_nodes",
		"Nodes counted for the upstream in the last poll (nodes pending purge left out).", "gauge", upstreamLabel}
)

var verdicts = []string{"up", "down", "no_checker", "not_found", "failed"}

// vipFamily is a family with one series per VIP (label vip); value says
// the VIP's value and whether the VIP has a series at all.
type vipFamily struct {
	family
	value func(v *status.VIPStatus) (float64, bool)
}

// vipFamilies are written one after the other, each a pass over the VIPs,
// so that each family is written once, whole.
var vipFamilies = []vipFamily{
	{family{"rhi_vip_bird_agrees",
		"1 if BIRD's table and exports matched the VIP's desired state in the last confirmation.", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) {
			// BIRD unreachable since: rhi_bird_up says so, agreement is unknown
			return birdValue(v, func(b *status.VIPConfirm) (float64, bool) { return b2f(b.Agrees), !b.Stale })
		}},
	{family{"rhi_vip_bird_confirm_seconds",
		"How long after the VIP's last change BIRD was first seen to agree; only for VIPs BIRD agrees with.", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) {
			// a latency is measured only when BIRD agrees
			return birdValue(v, func(b *status.VIPConfirm) (float64, bool) {
				return b.Latency.Seconds(), !b.Stale && b.Agrees && b.Latency > 0
			})
		}},
	{family{"rhi_vip_bird_renewals_total",
		"Address renewals done because BIRD missed a change.", "counter", vipLabel},
		func(v *status.VIPStatus) (float64, bool) {
			return birdValue(v, func(b *status.VIPConfirm) (float64, bool) { return float64(b.Renewed), true })
		}},
	{family{"rhi_vip_desired",
		"1 if rhi wants the VIP announced (health, hysteresis and policy).", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) { return b2f(v.Desired), true }},
	{family{"rhi_vip_on_interface",
		"1 if the VIP is on the interface.", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) { return b2f(v.OnInterface), true }},
	{family{"rhi_vip_drained",
		"1 if the operator drained the VIP (rhi drain).", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) { return b2f(v.Drained), true }},
	{family{"rhi_vip_draining",
		"1 while a drain or a withdrawing stop keeps the VIP in last resort for its drain_grace, before withdrawing it.", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) {
			return b2f(v.DrainPhase == "draining" || v.DrainPhase == "stopping"), true
		}},
	{family{"rhi_vip_drain_deadline_seconds",
		"When the VIP's drain_grace ends (Unix time); only while it is draining.", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) {
			if v.DrainDeadline.IsZero() {
				return 0, false
			}
			return float64(v.DrainDeadline.UnixNano()) / 1e9, true
		}},
	{family{"rhi_vip_degraded",
		"1 if rhi wants the VIP announced degraded (from the degraded interface, with a longer AS path).", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) { return b2f(v.Tier == decide.TierDegraded), true }},
	{family{"rhi_vip_failure_policy_active",
		"1 if the failure policy decides the VIP (max_failed_polls reached).", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) {
			return b2f(v.Reason == decide.ReasonPolicyWithdraw || v.Reason == decide.ReasonPolicyAnnounce), true
		}},
	{family{"rhi_vip_failed_polls",
		"Consecutive polls that could not settle the VIP.", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) { return float64(v.FailedPolls), true }},
	{family{"rhi_vip_fail_open",
		"1 while the fail-open guard keeps the VIP announced in last resort although its health fails; absent while the guard is off.", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) {
			if v.FailOpen == nil {
				return 0, false
			}
			return b2f(v.Tier == decide.TierLastResort), true
		}},
	{family{"rhi_vip_transitions_total",
		"Changes of the VIP's desired state since start.", "counter", vipLabel},
		func(v *status.VIPStatus) (float64, bool) { return float64(v.Transitions), true }},
	{family{"rhi_probe_success",
		"1 if the VIP's data-path probe was up in the last poll; only for VIPs with a probe.", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) {
			if v.Probe == nil {
				return 0, false
			}
			return b2f(v.Probe.Result == "up"), true
		}},
	{family{"rhi_probe_duration_seconds",
		"Latency of the VIP's data-path probe in the last poll; only for VIPs with a probe.", "gauge", vipLabel},
		func(v *status.VIPStatus) (float64, bool) {
			if v.Probe == nil {
				return 0, false
			}
			return v.Probe.LatencySeconds, true
		}},
}

// birdValue is f of the VIP's BIRD record; no series without one.
func birdValue(v *status.VIPStatus, f func(*status.VIPConfirm) (float64, bool)) (float64, bool) {
	if v.Bird == nil {
		return 0, false
	}
	return f(v.Bird)
}

// statusFamilies lists every family the collector may write, for the
// docs test and the oracle test.
func statusFamilies() []family {
	out := []family{famReady, famDryRun, famWriteErrors, famLastSettled, famPolls, famFailedPolls,
		famConsecutive, famInterval, famEffective, famPollCost, famCostTotal, famFastPolls, famMoving, famChecks, famIfaceUp, famDrainError, famUnmanaged, famUnmanagedAddr, famRecordError,
		famViewUnknown, famLastResortMissing, famBirdUp, famBGP, famUpstream, famUpstreamHealthy, famUpstreamNodes}
	for _, f := range vipFamilies {
		out = append(out, f.family)
	}
	return out
}

// collector writes the daemon's status as metrics at scrape time; now is
// the clock rhi_ready is judged by.
//
// It writes the Prometheus text format itself, not through client_golang's
// const metrics: those cost ~10 allocations and ~5 KB of garbage a series
// (a Desc lookup, label pairs, a dto protobuf, sorting, encoding), 96 MB
// and 0.56 s of CPU a scrape at 10,000 VIPs. Series of a family
// are in config order, not sorted.
type collector struct {
	src status.Source
	now func() time.Time
}

// write writes s's families to w.
func (c *collector) write(w *textWriter, s *status.Status) {
	c.writeReady(w, *s)
	c.writeRest(w, s)
}

// writeReady writes rhi_ready: whether Judge finds s healthy now.
func (c *collector) writeReady(w *textWriter, s status.Status) {
	w.begin(&famReady).sample(b2f(status.Judge(s, c.now()) == nil))
}

// writeRest writes s's families but rhi_ready, which depends on the
// clock: what a shared /metrics document holds.
func (c *collector) writeRest(w *textWriter, s *status.Status) {
	w.begin(&famDryRun).sample(b2f(s.DryRun))
	if !s.Ready {
		return
	}
	w.begin(&famWriteErrors).sample(float64(s.Interface.WriteErrors))
	settled := 0.0
	if !s.ControlAPI.LastSettled.IsZero() {
		settled = float64(s.ControlAPI.LastSettled.UnixMilli()) / 1e3
	}
	w.begin(&famLastSettled).sample(settled)
	w.begin(&famPolls).sample(float64(s.ControlAPI.Polls))
	w.begin(&famFailedPolls).sample(float64(s.ControlAPI.FailedPolls))
	w.begin(&famConsecutive).sample(float64(s.ControlAPI.ConsecutiveFailedPolls))
	pol := &s.ControlAPI.Polling
	w.begin(&famInterval).sample(s.ControlAPI.PollInterval.Seconds())
	w.begin(&famEffective).sample(s.ControlAPI.Interval().Seconds())
	w.begin(&famPollCost).sample(pol.PollCost.Seconds())
	w.begin(&famCostTotal).sample(pol.CostTotal.Seconds())
	w.begin(&famFastPolls).sample(float64(pol.FastPolls))
	w.begin(&famMoving).sample(float64(pol.Moving))
	w.begin(&famChecks).sample(float64(pol.ListEntries))
	w.begin(&famIfaceUp).sample(b2f(s.Interface.Exists && s.Interface.Up), s.Interface.Name)
	w.begin(&famDrainError).sample(b2f(s.Drain.Error != ""))
	w.begin(&famUnmanaged).sample(float64(len(s.Interface.Unmanaged)), s.Interface.Name)
	w.begin(&famUnmanagedAddr)
	for _, a := range s.Interface.Unmanaged {
		w.sample(1, a, s.Interface.Name)
	}
	w.begin(&famRecordError).sample(b2f(s.Interface.RecordError != ""))
	if s.FailOpen != nil {
		w.begin(&famViewUnknown).sample(b2f(!s.FailOpen.Known))
		w.begin(&famLastResortMissing).sample(b2f(!s.FailOpen.LastResortExists))
	}
	if s.Bird.Enabled && !s.Bird.LastCheck.IsZero() {
		w.begin(&famBirdUp).sample(b2f(s.Bird.Error == ""))
		if s.Bird.Error == "" { // else Protocols is what BIRD said before it went away
			w.begin(&famBGP)
			for _, p := range s.Bird.Protocols {
				w.sample(b2f(p.Established), p.Name)
			}
		}
	}
	for i := range vipFamilies {
		f := &vipFamilies[i]
		if w.begin(&f.family).skip {
			continue
		}
		for j := range s.VIPs {
			if v, ok := f.value(&s.VIPs[j]); ok {
				w.sample(v, s.VIPs[j].Address)
			}
		}
	}
	writeUpstreams(w, s.VIPs)
}

// writeUpstreams writes the upstream families: one series (or one per
// verdict) for each upstream, the first VIP's record of it when several
// share it. Keys that name one resource in different spellings
// (`/upstreams/1`, `/apisix/upstreams/1`) are one upstream, read once:
// one series, under the first key met.
func writeUpstreams(w *textWriter, vips []status.VIPStatus) {
	n := 0
	for i := range vips {
		n += len(vips[i].Upstreams)
	}
	if n == 0 {
		return
	}
	seen := make(map[string]struct{}, n)
	ups := make([]*status.UpstreamStatus, 0, n)
	for i := range vips {
		for j := range vips[i].Upstreams {
			u := &vips[i].Upstreams[j]
			// Two spellings of one resource (two etcd prefixes) share
			// their short key, and are one series.
			r := health.ShortKey(u.Key)
			if _, ok := seen[r]; ok {
				continue // shared by several VIPs: one series
			}
			seen[r] = struct{}{}
			ups = append(ups, u)
		}
	}
	w.begin(&famUpstream)
	for _, u := range ups {
		for _, name := range verdicts {
			w.sample(b2f(u.Verdict == name), u.Key, name)
		}
	}
	w.begin(&famUpstreamHealthy)
	for _, u := range ups {
		w.sample(float64(u.Healthy), u.Key)
	}
	w.begin(&famUpstreamNodes)
	for _, u := range ups {
		w.sample(float64(u.Nodes), u.Key)
	}
}

// textWriter writes families in the Prometheus text exposition format
// (0.0.4) as client_golang's expfmt does: a family's HELP and TYPE lines
// before its first series (none for a family without series), label
// values and help escaped, values formatted by expfmt's rules. It
// allocates nothing per series. Write errors stick in w (bufio) and are
// the client's: the handler ends there.
type textWriter struct {
	w      *bufio.Writer
	filter map[string]bool // the request's name[] (as promhttp); nil: every family
	fam    *family
	open   bool // fam's header is written
	skip   bool // fam is filtered out
	num    [32]byte
}

// begin starts family f; its header waits for its first series.
func (t *textWriter) begin(f *family) *textWriter {
	t.fam, t.open = f, false
	t.skip = t.filter != nil && !t.filter[f.name]
	return t
}

// sample writes one series of the current family; values are its label
// values in the order of its labels.
func (t *textWriter) sample(v float64, values ...string) {
	if t.skip {
		return
	}
	f, w := t.fam, t.w
	if !t.open {
		w.WriteString("# HELP ")
		w.WriteString(f.name)
		w.WriteByte(' ')
		writeEscaped(w, f.help, false)
		w.WriteString("\n# TYPE ")
		w.WriteString(f.name)
		w.WriteByte(' ')
		w.WriteString(f.typ)
		w.WriteByte('\n')
		t.open = true
	}
	w.WriteString(f.name)
	if len(values) > 0 {
		for i, val := range values {
			if i == 0 {
				w.WriteByte('{')
			} else {
				w.WriteByte(',')
			}
			w.WriteString(f.labels[i])
			w.WriteString(`="`)
			if !utf8.ValidString(val) {
				// A name taken from BIRD's output unchecked: one
				// invalid byte would make Prometheus reject the
				// whole scrape, every alert with it.
				val = strings.ToValidUTF8(val, "\uFFFD")
			}
			writeEscaped(w, val, true)
			w.WriteByte('"')
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	t.writeFloat(v)
	w.WriteByte('\n')
}

// writeFloat is expfmt's writeFloat.
func (t *textWriter) writeFloat(f float64) {
	switch {
	case f == 1:
		t.w.WriteByte('1')
	case f == 0:
		t.w.WriteByte('0')
	case f == -1:
		t.w.WriteString("-1")
	case math.IsNaN(f):
		t.w.WriteString("NaN")
	case math.IsInf(f, +1):
		t.w.WriteString("+Inf")
	case math.IsInf(f, -1):
		t.w.WriteString("-Inf")
	default:
		t.w.Write(strconv.AppendFloat(t.num[:0], f, 'g', -1, 64))
	}
}

// writeEscaped writes s with '\' and newline escaped, and '"' too if
// quoted (a label value; help text is not quoted), as expfmt does.
func writeEscaped(w *bufio.Writer, s string, quoted bool) {
	for {
		i := escapeIndex(s, quoted)
		if i < 0 {
			w.WriteString(s)
			return
		}
		w.WriteString(s[:i])
		switch s[i] {
		case '\\':
			w.WriteString(`\\`)
		case '\n':
			w.WriteString(`\n`)
		default:
			w.WriteString(`\"`)
		}
		s = s[i+1:]
	}
}

// escapeIndex is the index of the first byte of s that writeEscaped
// escapes, -1 if none (strings.IndexAny, without building its set at
// every call: a third of a scrape's CPU).
func escapeIndex(s string, quoted bool) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '\n':
			return i
		case '"':
			if quoted {
				return i
			}
		}
	}
	return -1
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
