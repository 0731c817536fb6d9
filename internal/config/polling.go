package config

import (
	"fmt"
	"time"
)

// DefaultFastPollInterval is fast_poll_interval's default: short enough
// that rhi's share of a withdraw stays near a tenth of a second once APISIX
// shows an upstream moving, long enough that polling one upstream that
// often costs APISIX a small part of the poll budget.
const DefaultFastPollInterval = 100 * time.Millisecond

// MinFastPollInterval is the shortest fast_poll_interval.
const MinFastPollInterval = 20 * time.Millisecond

// DefaultPollBudget is apisix_poll_budget's default, in percent of one
// APISIX worker.
const DefaultPollBudget Percent = 1

// parseFastPollInterval reads fast_poll_interval: "0" (off) or a duration
// of at least MinFastPollInterval.
func parseFastPollInterval(s string) (time.Duration, issue) {
	if s == "0" || s == "0s" {
		return 0, issue{}
	}
	d, is := parseDuration(s)
	switch {
	case !is.ok():
		return 0, issue{msg: is.msg, allowed: "0 (off) or " + durationHint}
	case d < MinFastPollInterval:
		return 0, issue{msg: "too short", allowed: "0 (off) or at least " + MinFastPollInterval.String()}
	}
	return d, issue{}
}

// parseBudget reads apisix_poll_budget: a percentage, "0%" for no budget.
func parseBudget(s string) (Percent, issue) { return parsePercent(s) }

// RestartWindow is how long a graceful restart of APISIX refuses
// connections to its control API, measured on APISIX 3.18: ~3 s. A poll
// grid must not let max_failed_polls polls in a row fall inside it.
const RestartWindow = 3 * time.Second

// restartMargin is what the restart check adds to RestartWindow: a restart
// took up to 3.3 s.
const restartMargin = time.Second

// restartWarning warns when max_failed_polls polls in a row can all fall
// inside one APISIX restart: the first at its very start, the last
// (max_failed_polls-1) intervals later. Under the withdraw policy every
// VIP would then be withdrawn and announced again a few seconds later.
func restartWarning(c *Config) string {
	if c.FailurePolicy.ControlAPIUnreachable != Withdraw || c.PollInterval <= 0 {
		return ""
	}
	span := time.Duration(c.FailurePolicy.MaxFailedPolls-1) * c.PollInterval
	if span >= RestartWindow+restartMargin {
		return ""
	}
	need := int((RestartWindow+restartMargin+c.PollInterval-1)/c.PollInterval) + 1
	return fmt.Sprintf("failure_policy.max_failed_polls: %d polls %s apart span %s, less than the ~%s a graceful APISIX restart refuses connections (plus %s): a restart would withdraw every VIP and announce it again; use max_failed_polls: %d or more at this interval",
		c.FailurePolicy.MaxFailedPolls, c.PollInterval, span, RestartWindow, restartMargin, need)
}

// Cost of one APISIX worker per poll, as measured on APISIX 3.18 (issue
// "A good citizen on the ADC"): the list costs ~31 µs per checker and more
// as they grow; one upstream's GET ~75 µs plus ~74 ns per upstream APISIX
// holds. A config watching n distinct upstreams makes APISIX hold at least
// n checkers, so these are lower bounds.
const (
	listCostPerChecker = 31 * time.Microsecond
	oneCost            = 75 * time.Microsecond
)

// minPollCost is the least a poll of n distinct upstreams costs APISIX:
// the cheaper of the list of at least n checkers and n one-upstream GETs.
func minPollCost(n int) time.Duration {
	list := time.Duration(n) * listCostPerChecker
	one := time.Duration(n) * (oneCost + time.Duration(n)*74*time.Nanosecond)
	return min(list, one)
}

// budgetWarning warns when, at the watched number of distinct upstreams,
// apisix_poll_interval cannot keep within apisix_poll_budget: rhi will
// stretch the interval, and says to what at least.
func budgetWarning(c *Config) string {
	if c.PollBudget <= 0 || c.PollInterval <= 0 {
		return ""
	}
	n := distinctResources(c)
	cost := minPollCost(n)
	share := float64(cost) / float64(c.PollInterval) * 100
	if share <= float64(c.PollBudget) {
		return ""
	}
	stretched := time.Duration(float64(cost) / (float64(c.PollBudget) / 100)).Round(100 * time.Millisecond)
	return fmt.Sprintf("apisix_poll_interval: %s is too short for %d upstreams: a poll costs APISIX at least ~%s of one worker (%.1f%% of it at this interval, over apisix_poll_budget %g%%), during which that worker's traffic waits; rhi will poll every %s or more (see docs/semantics.md, Polling and its cost)",
		c.PollInterval, n, cost.Round(100*time.Microsecond), share, float64(c.PollBudget), stretched)
}

// distinctResources counts the distinct resources the VIPs' upstream keys
// name (two spellings of one resource are one), by the rule the config
// was read with.
func distinctResources(c *Config) int {
	seen := map[string]bool{}
	for i := range c.VIPs {
		for _, u := range c.VIPs[i].Upstreams {
			if res, err := c.keys.resource(u.Key); err == nil {
				seen[res] = true
			}
		}
	}
	return len(seen)
}
