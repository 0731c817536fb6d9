package status

import (
	"encoding/json"
	"math"
	"time"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/router"
)

// SchemaVersion is the version of the /status JSON. Version 1 was the
// unversioned format with durations as "_ns" integers and zero times
// written out; version 2 has durations as float seconds named "_seconds",
// and leaves out a time that has not happened.
const SchemaVersion = 2

// Status is the daemon's state as /status and `rhi status` show it. Field
// names are part of the JSON contract; a time that has not happened is left
// out, never written as the zero time.
type Status struct {
	SchemaVersion int  `json:"schema_version"`
	Ready         bool `json:"ready"` // the first tick has run
	// DryRun: started with --dry-run, rhi changes nothing on the interface.
	DryRun bool `json:"dry_run"`
	// LastTick is when the loop last finished a tick (poll, decide, set).
	LastTick   time.Time       `json:"last_tick,omitzero"`
	Interface  InterfaceStatus `json:"interface"`
	ControlAPI APIStatus       `json:"control_api"`
	Bird       BirdStatus      `json:"bird"`
	Drain      DrainStatus     `json:"drain"`
	// FailOpen is the fail-open guard's view; nil while it is off.
	FailOpen *FailOpenStatus `json:"fail_open,omitempty"`
	// Reload is filled by whoever decides reloads (cmd/rhi's reloadState);
	// Daemon.Status leaves it zero.
	Reload ReloadStatus `json:"reload"`
	VIPs   []VIPStatus  `json:"vips"`
}

// InterfaceStatus is what the last tick saw on the VIP interface.
type InterfaceStatus struct {
	Name   string `json:"name"`
	Exists bool   `json:"exists"`
	Up     bool   `json:"up"`
	Error  string `json:"error,omitempty"`
	// WriteErrors counts the interface writes that failed since start;
	// FailedWrites the ticks in a row whose write failed.
	WriteErrors  uint64 `json:"write_errors_total"`
	FailedWrites int    `json:"consecutive_failed_writes"`
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
// Its durations are float seconds in JSON (see MarshalJSON).
type APIStatus struct {
	URL                    string        `json:"url"`
	PollInterval           time.Duration `json:"-"` // poll_interval_seconds
	Timeout                time.Duration `json:"-"` // timeout_seconds
	LastPoll               time.Time     `json:"last_poll,omitzero"`
	PollDuration           time.Duration `json:"-"` // poll_duration_seconds
	Upstreams              int           `json:"upstreams"`
	Unreadable             int           `json:"unreadable"` // failed or not found in the last poll
	ConsecutiveFailedPolls int           `json:"consecutive_failed_polls"`
	Polls                  uint64        `json:"polls_total"`
	FailedPolls            uint64        `json:"failed_polls_total"`
	// MaxFailedPolls is failure_policy.max_failed_polls in force.
	MaxFailedPolls int `json:"max_failed_polls"`
	// LastSettled is the end of the last poll that settled at least one
	// VIP (told rhi whether it is available); UnsettledPolls counts the
	// polls since that settled none.
	LastSettled    time.Time `json:"last_settled_poll,omitzero"`
	UnsettledPolls int       `json:"consecutive_unsettled_polls"`
	// Polling is how rhi paces its polls: fast polls of moving upstreams
	// and the budget of APISIX's time.
	Polling PollingStatus `json:"polling"`
}

// PollingStatus is how rhi paces its polls of the control API. Its
// durations are float seconds in JSON.
type PollingStatus struct {
	// EffectiveInterval is the regular grid's interval now: the
	// configured one, or longer when the budget stretches it.
	EffectiveInterval time.Duration `json:"-"` // effective_interval_seconds
	// StretchedSince is when the interval was last stretched; absent
	// while it is not.
	StretchedSince time.Time `json:"stretched_since,omitzero"`
	// FastInterval is the fast polls' interval now; 0 when off.
	FastInterval time.Duration `json:"-"` // fast_interval_seconds
	// Moving counts the upstreams being fast-polled now.
	Moving    int    `json:"moving_upstreams"`
	FastPolls uint64 `json:"fast_polls_total"`
	// BudgetPercent is apisix_poll_budget; 0: none.
	BudgetPercent float64 `json:"budget_percent"`
	// PollCost is what the last regular poll took of APISIX's time,
	// measured request by request; CostTotal every request's, ever.
	PollCost  time.Duration `json:"-"` // poll_cost_seconds
	CostTotal time.Duration `json:"-"` // cost_seconds_total
	// ListEntries is the length of the last list read: the checkers
	// APISIX holds. 0 when the last poll read no list.
	ListEntries int `json:"list_entries"`
}

// pollingJSON is PollingStatus without its methods.
type pollingJSON PollingStatus

type pollingWire struct {
	pollingJSON
	EffectiveInterval float64 `json:"effective_interval_seconds"`
	FastInterval      float64 `json:"fast_interval_seconds"`
	PollCost          float64 `json:"poll_cost_seconds"`
	CostTotal         float64 `json:"cost_seconds_total"`
}

// MarshalJSON writes the durations as float seconds.
func (p PollingStatus) MarshalJSON() ([]byte, error) {
	return json.Marshal(pollingWire{pollingJSON(p), p.EffectiveInterval.Seconds(), p.FastInterval.Seconds(), p.PollCost.Seconds(), p.CostTotal.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *PollingStatus) UnmarshalJSON(b []byte) error {
	var w pollingWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = PollingStatus(w.pollingJSON)
	p.EffectiveInterval, p.FastInterval = seconds(w.EffectiveInterval), seconds(w.FastInterval)
	p.PollCost, p.CostTotal = seconds(w.PollCost), seconds(w.CostTotal)
	return nil
}

// Interval is the poll interval in force: the effective one when known.
func (a APIStatus) Interval() time.Duration {
	return max(a.PollInterval, a.Polling.EffectiveInterval)
}

// VIPStatus is one VIP: what rhi decided, why, and what the interface holds.
type VIPStatus struct {
	Address     string              `json:"address"`
	Description string              `json:"description,omitempty"`
	Condition   string              `json:"condition"`
	Verdict     decide.Availability `json:"verdict"`
	Reason      decide.Reason       `json:"reason"`
	Desired     bool                `json:"desired"` // should be on the interface
	Drained     bool                `json:"drained"` // withdrawn by the operator
	// DrainPhase is where a drain, or a withdrawing stop, has got to:
	// "draining" (or "stopping") while the VIP stays in last resort for its
	// drain_grace, until DrainDeadline; "drained" once the drain
	// withdraws it; empty when it is not drained.
	DrainPhase    string           `json:"drain_phase,omitempty"`
	DrainDeadline time.Time        `json:"drain_deadline,omitzero"`
	OnInterface   bool             `json:"on_interface"`   // is on the interface
	Since         time.Time        `json:"since,omitzero"` // last change of either
	FailedPolls   int              `json:"failed_polls"`
	Streak        int              `json:"streak,omitempty"` // polls towards rise/fall
	Transitions   uint64           `json:"transitions"`      // changes of Desired since start
	Upstreams     []UpstreamStatus `json:"upstreams"`
	// Bird is BIRD's view of the VIP in the last confirmation; nil when
	// confirmation is off or has not run yet.
	Bird *VIPConfirm `json:"bird,omitempty"`
	// Tier is the VIP's placement on the ladder, drain included:
	// announced (full weight), degraded, last_resort or withdrawn; Reason
	// is the placement's. OnDegraded, OnLastResort: the VIP is on that
	// interface (OnInterface: on any of rhi's interfaces).
	Tier         decide.Tier `json:"tier"`
	OnDegraded   bool        `json:"on_degraded_interface,omitempty"`
	OnLastResort bool        `json:"on_last_resort_interface,omitempty"`
	// Probe is the VIP's data-path probe in the last poll; nil when the
	// VIP has none.
	Probe *ProbeStatus `json:"probe,omitempty"`
	// FailOpen is the fail-open guard's view of the VIP; nil while the
	// guard is off (fail_open.min_other_sites 0).
	FailOpen *VIPFailOpen `json:"fail_open,omitempty"`
}

// VIPFailOpen is the fail-open guard's view of one VIP. Whether the guard
// keeps it in last resort is its Tier and Reason.
type VIPFailOpen struct {
	// OtherSites is how many other sites BIRD last said serve the VIP;
	// -1 when its answer could not tell (Error says why).
	OtherSites int `json:"other_sites"`
	// Since starts the current run of answers with at least
	// min_other_sites serving other sites; zero (left out): no run.
	Since time.Time `json:"since,omitzero"`
	Error string    `json:"error,omitempty"`
}

// FailOpenStatus is the fail-open guard's view as a whole.
type FailOpenStatus struct {
	MinOtherSites int     `json:"min_other_sites"`
	HoldSeconds   float64 `json:"hold_seconds"`
	// Known is false while BIRD's view of the other sites is unknown
	// (Error says why): no VIP whose health fails is withdrawn then,
	// every one stays in last resort.
	Known      bool      `json:"known"`
	Error      string    `json:"error,omitempty"`
	LastAnswer time.Time `json:"last_answer,omitzero"` // when BIRD last answered
	// LastResortInterface is last_resort.interface; LastResortExists is
	// false while it is missing: the tier is unavailable, and a VIP whose
	// health fails stays where it is.
	LastResortInterface string `json:"last_resort_interface"`
	LastResortExists    bool   `json:"last_resort_exists"`
}

// ProbeStatus is what a VIP's data-path probe said in the last poll.
type ProbeStatus struct {
	Target string `json:"target"` // "GET URL (host HOST)", user info masked
	Result string `json:"result"` // up, down, unreachable
	// Status is the HTTP status received; 0 (left out) when none came.
	Status         int     `json:"status,omitempty"`
	LatencySeconds float64 `json:"latency_seconds"` // request to response headers, or to the failure
	Error          string  `json:"error,omitempty"`
}

// UpstreamStatus is one upstream's verdict in the last poll.
type UpstreamStatus struct {
	Key     string `json:"key"`
	Verdict string `json:"verdict"`
	Healthy int    `json:"healthy"`
	Nodes   int    `json:"nodes"`
	Error   string `json:"error,omitempty"`
	// MinHealthy is the capacity threshold ("3", "50%"), Needed the
	// healthy nodes it asks of Nodes; both left out without one.
	MinHealthy string `json:"min_healthy,omitempty"`
	Needed     int    `json:"needed,omitempty"`
}

// BirdStatus is BIRD's side of the status: whether rhi checks BIRD, and
// what the last check found.
type BirdStatus struct {
	Enabled   bool      `json:"enabled"`
	Socket    string    `json:"socket,omitempty"`
	LastCheck time.Time `json:"last_check,omitzero"`
	// LastOK is the end of the last check that BIRD answered; after an
	// Error it tells how long BIRD has been away.
	LastOK    time.Time              `json:"last_ok,omitzero"`
	Error     string                 `json:"error,omitempty"` // could not check
	Protocols []router.ProtocolState `json:"protocols,omitempty"`
	Problems  []string               `json:"problems,omitempty"`
	Agree     int                    `json:"vips_agreeing"`
	Disagree  int                    `json:"vips_disagreeing"`
}

// VIPConfirm is what BIRD said about one VIP in the last check.
type VIPConfirm struct {
	// Expected is what the check held BIRD to: a record made before a
	// drain was checked against "present", and must not be read as the
	// drain's confirmation.
	Expected router.Expectation `json:"expected"`
	Agrees   bool               `json:"agrees"`
	// LastResort: the check held BIRD to the last-resort tier's marks
	// (GRACEFUL_SHUTDOWN, the largest prepend): with Agrees, BIRD exports
	// the VIP as last resort, the first step of a drain.
	LastResort bool `json:"last_resort,omitempty"`
	// Stale: the checks since this record could not reach BIRD, so it
	// says what BIRD said then, not now.
	Stale     bool            `json:"stale,omitempty"`
	Problem   string          `json:"problem,omitempty"`
	InTable   bool            `json:"in_bird_table"`
	Exported  map[string]bool `json:"exported,omitempty"`
	CheckedAt time.Time       `json:"checked_at,omitzero"`
	// Latency is how long BIRD took to agree: from the VIP's last change
	// or, when BIRD agreed with that change and then stopped, from when
	// that disagreement was first seen. Zero while it disagrees. JSON:
	// confirm_latency_seconds, left out when zero (see MarshalJSON).
	Latency time.Duration `json:"-"`
	// DisagreeingSince is when the current disagreement was first seen;
	// zero, and left out, while BIRD agrees.
	DisagreeingSince time.Time `json:"disagreeing_since,omitzero"`
	// Renewed counts address renewals done to make BIRD see a change it
	// missed.
	Renewed int `json:"renewed,omitempty"`
}

// confirmJSON is VIPConfirm without its methods, for MarshalJSON.
type confirmJSON VIPConfirm

// confirmWire is VIPConfirm as JSON: the latency as float seconds, left
// out while there is none.
type confirmWire struct {
	confirmJSON
	Latency float64 `json:"confirm_latency_seconds,omitempty"`
}

// MarshalJSON writes the latency as float seconds.
func (v VIPConfirm) MarshalJSON() ([]byte, error) {
	return json.Marshal(confirmWire{confirmJSON(v), v.Latency.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *VIPConfirm) UnmarshalJSON(b []byte) error {
	var w confirmWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*v = VIPConfirm(w.confirmJSON)
	v.Latency = seconds(w.Latency)
	return nil
}

// apiJSON is APIStatus without its methods, for MarshalJSON.
type apiJSON APIStatus

// apiWire is APIStatus as JSON: durations as float seconds.
type apiWire struct {
	apiJSON
	PollInterval float64 `json:"poll_interval_seconds"`
	Timeout      float64 `json:"timeout_seconds"`
	PollDuration float64 `json:"poll_duration_seconds"`
}

// MarshalJSON writes the durations as float seconds.
func (a APIStatus) MarshalJSON() ([]byte, error) {
	return json.Marshal(apiWire{apiJSON(a), a.PollInterval.Seconds(), a.Timeout.Seconds(), a.PollDuration.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *APIStatus) UnmarshalJSON(b []byte) error {
	var w apiWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*a = APIStatus(w.apiJSON)
	a.PollInterval, a.Timeout, a.PollDuration = seconds(w.PollInterval), seconds(w.Timeout), seconds(w.PollDuration)
	return nil
}

// seconds turns float seconds back into a Duration, to the nanosecond.
func seconds(f float64) time.Duration {
	return time.Duration(math.Round(f * float64(time.Second)))
}

// ReloadStatus is the daemon's configuration reloads since start, for
// `rhi reload`, which waits until Generation passes the one it saw and the
// attempt is no longer in progress. An attempt is applied or rejected;
// AppliedGeneration == Generation says the last one was applied.
type ReloadStatus struct {
	// Generation counts reload attempts since start, the one in progress
	// included; 0: none.
	Generation uint64 `json:"generation"`
	// InProgress: attempt Generation is still being decided or applied.
	InProgress bool `json:"in_progress,omitempty"`
	// AppliedGeneration is the last attempt applied; 0: the configuration
	// of start-up runs.
	AppliedGeneration uint64 `json:"applied_generation"`
	// LastAt is when attempt Generation began.
	LastAt time.Time `json:"last_at,omitzero"`
	// LastError says why attempt Generation was rejected, every reason.
	LastError string `json:"last_error,omitempty"`
}
