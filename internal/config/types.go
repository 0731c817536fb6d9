package config

import (
	"net/netip"
	"time"

	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/probespec"
)

// Condition says how a VIP's upstream verdicts combine.
type Condition string

const (
	All Condition = "all" // available when every upstream is up
	Any Condition = "any" // available when at least one upstream is up
)

// Action is what happens to a VIP that the control API cannot settle for
// max_failed_polls polls in a row.
type Action string

const (
	Withdraw Action = "withdraw"
	Announce Action = "announce"
)

// PollMode is how a poll reads the control API (apisix_poll_mode); the
// client's apisix.Mode has the same words.
type PollMode string

const (
	PollPerUpstream PollMode = "per_upstream" // one request per resource
	PollList        PollMode = "list"         // the whole list, the rest one by one
	PollAuto        PollMode = "auto"         // the list while it pays, else per upstream
)

// LogFormat is how log lines are written.
type LogFormat string

const (
	LogText LogFormat = "text" // key=value lines
	LogJSON LogFormat = "json" // one object per line
)

// CountAs is how an upstream without a health checker counts
// (failure_policy.no_checker).
type CountAs string

const (
	CountHealthy   CountAs = "healthy"
	CountUnhealthy CountAs = "unhealthy"
)

// ShutdownAction is what rhi does with its VIPs when it stops (on_shutdown).
type ShutdownAction string

const (
	ShutdownKeep     ShutdownAction = "keep"     // leave them announced
	ShutdownWithdraw ShutdownAction = "withdraw" // remove them from the interface
)

// UnmanagedAction is what rhi does with host addresses on its interface
// that it neither has in its config nor in its record
// (unmanaged_addresses).
type UnmanagedAction string

const (
	UnmanagedReport   UnmanagedAction = "report"   // warn, list, count
	UnmanagedWithdraw UnmanagedAction = "withdraw" // delete them; for a dedicated interface
)

// Config is a validated, typed rhi configuration with every default applied.
type Config struct {
	PollInterval time.Duration `yaml:"apisix_poll_interval"`
	ControlURL   string        `yaml:"apisix_control_url"`
	Timeout      time.Duration `yaml:"apisix_timeout"`
	PollMode     PollMode      `yaml:"apisix_poll_mode"`
	// FastPollInterval is how often an upstream that is moving between
	// states (a node mostly_healthy or mostly_unhealthy, a node newly
	// unhealthy, a probe that just failed) is polled alone until it
	// settles; 0 turns fast polls off.
	FastPollInterval time.Duration `yaml:"fast_poll_interval"`
	// PollBudget is the share of one APISIX worker's time rhi's requests
	// to the control API may take, measured; the effective poll interval
	// is stretched to stay under it. 0 turns the budget off.
	PollBudget    Percent        `yaml:"apisix_poll_budget"`
	Interface     string         `yaml:"interface"`
	MainLog       string         `yaml:"main_log"`
	ErrorLog      string         `yaml:"error_log"`
	LogFormat     LogFormat      `yaml:"log_format"`
	FailurePolicy FailurePolicy  `yaml:"failure_policy"`
	Bird          Bird           `yaml:"bird"`
	Rise          int            `yaml:"rise"`
	Fall          int            `yaml:"fall"`
	OnShutdown    ShutdownAction `yaml:"on_shutdown"`
	StatusListen  string         `yaml:"status_listen"`
	// ControlSocket is the unix socket the CLI (`rhi status`, `rhi verify`,
	// `rhi drain`) asks the daemon on; empty disables it.
	ControlSocket string `yaml:"control_socket"`
	// DrainFile holds the VIPs drained by `rhi drain`, one per line (or
	// "all"); it survives restarts. A missing file drains nothing.
	DrainFile string `yaml:"drain_file"`
	// DrainGrace is how long a drained VIP, and every VIP at a withdrawing
	// shutdown, stays announced in last resort before it is withdrawn
	// (0: withdrawn at once); a VIP's own drain_grace overrides it.
	DrainGrace time.Duration `yaml:"drain_grace"`
	// StateFile records the VIPs rhi owns on the interface, so that after a
	// restart it can withdraw those the config no longer lists.
	StateFile string `yaml:"state_file"`
	// Unmanaged is what to do with host addresses on the interface that rhi
	// neither has in its config nor in its record.
	Unmanaged UnmanagedAction `yaml:"unmanaged_addresses"`
	// FailOpen is the fail-open guard; off while MinOtherSites
	// is 0.
	FailOpen FailOpen `yaml:"fail_open"`
	VIPs     []VIP    `yaml:"vips"`
	// Degraded is the degraded tier's default for every VIP, and its one
	// interface.
	Degraded Degraded `yaml:"degraded"`
	// LastResort is the last-resort tier: where the fail-open guard keeps
	// a VIP whose health fails.
	LastResort LastResort `yaml:"last_resort"`
	// SiteID is this site's identity, the one BIRD tags its VIP routes
	// with (RHI_SITE_ID); 0: BIRD's router id.
	SiteID SiteID `yaml:"site_id,omitempty"`
	// Deprecated lists, as "FILE:LINE: PATH: message", the keys that are
	// read but no longer used; Warnings reports them.
	Deprecated []string `yaml:"-"`
	// notes are warnings the parser found at a line of the file (a
	// duration that is probably not what was meant), for Warnings.
	notes []string
	// keys is the rule the upstream keys were read by, which says what
	// resource each reads; nil: each key is its own.
	keys KeyRule
}

// FailurePolicy is the failure_policy section.
type FailurePolicy struct {
	ControlAPIUnreachable Action `yaml:"control_api_unreachable"`
	MaxFailedPolls        int    `yaml:"max_failed_polls"`
	// NoChecker is how an upstream that APISIX has no health checker for
	// counts.
	NoChecker CountAs `yaml:"no_checker"`
}

// Bird is the bird section: where and what to confirm.
type Bird struct {
	Socket    string        `yaml:"socket"`
	Protocols []string      `yaml:"protocols"` // empty: every BGP protocol BIRD reports
	Timeout   time.Duration `yaml:"timeout"`
}

// VIP is one virtual address and the upstreams it depends on.
type VIP struct {
	Address     netip.Prefix `yaml:"address"` // host prefix: /32 or /128
	Description string       `yaml:"description"`
	// Upstreams are the keys as written ("/apisix/upstreams/api") with the
	// resources they name, parsed once here; a Config prints them as keys.
	Upstreams []health.Upstream `yaml:"upstreams"`
	Condition Condition         `yaml:"condition"`
	Rise      int               `yaml:"rise"` // effective value: the global one unless overridden
	Fall      int               `yaml:"fall"`
	// Probe is the VIP's data-path probe; nil: none.
	Probe *probespec.Spec `yaml:"probe,omitempty"`
	// Degraded is the VIP's effective degraded tier: the global one unless
	// the VIP sets its own below.
	Degraded Degraded `yaml:"degraded"`
	// DrainGrace is the VIP's effective drain_grace: the global one unless
	// the VIP sets its own.
	DrainGrace time.Duration `yaml:"drain_grace"`
}
