package config

import (
	"net/netip"
	"time"
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

// Config is a validated, typed rhi configuration with every default applied.
type Config struct {
	PollInterval  time.Duration `yaml:"apisix_poll_interval"`
	ControlURL    string        `yaml:"apisix_control_url"`
	Timeout       time.Duration `yaml:"apisix_timeout"`
	PollMode      string        `yaml:"apisix_poll_mode"` // "per_upstream", "list" or "auto": see apisix.Mode
	Interface     string        `yaml:"interface"`
	MainLog       string        `yaml:"main_log"`
	ErrorLog      string        `yaml:"error_log"`
	LogFormat     string        `yaml:"log_format"` // "text" (key=value lines) or "json" (one object per line)
	FailurePolicy FailurePolicy `yaml:"failure_policy"`
	Bird          Bird          `yaml:"bird"`
	Rise          int           `yaml:"rise"`
	Fall          int           `yaml:"fall"`
	OnShutdown    string        `yaml:"on_shutdown"` // "keep" or "withdraw"
	StatusListen  string        `yaml:"status_listen"`
	// ControlSocket is the unix socket the CLI (`rhi status`, `rhi verify`,
	// `rhi drain`) asks the daemon on; empty disables it.
	ControlSocket string `yaml:"control_socket"`
	// DrainFile holds the VIPs drained by `rhi drain`, one per line (or
	// "all"); it survives restarts. A missing file drains nothing.
	DrainFile string `yaml:"drain_file"`
	// StateFile records the VIPs rhi owns on the interface, so that after a
	// restart it can withdraw those the config no longer lists.
	StateFile string `yaml:"state_file"`
	// Unmanaged is what to do with host addresses on the interface that rhi
	// neither has in its config nor in its record: "report" (warn, list,
	// count) or "withdraw" (delete them; for a dedicated interface).
	Unmanaged string `yaml:"unmanaged_addresses"`
	VIPs      []VIP  `yaml:"vips"`
}

// FailurePolicy is the failure_policy section.
type FailurePolicy struct {
	ControlAPIUnreachable Action `yaml:"control_api_unreachable"`
	MaxFailedPolls        int    `yaml:"max_failed_polls"`
	// NoChecker is "healthy" or "unhealthy": how an upstream that APISIX has
	// no health checker for counts.
	NoChecker string `yaml:"no_checker"`
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
	Upstreams   []string     `yaml:"upstreams"` // keys like "/apisix/upstreams/api", validated
	Condition   Condition    `yaml:"condition"`
	Rise        int          `yaml:"rise"` // effective value: the global one unless overridden
	Fall        int          `yaml:"fall"`
}
