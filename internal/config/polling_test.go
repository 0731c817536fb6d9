package config

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/health"
)

// A restart of APISIX refuses connections for ~3 s: the check warns when
// max_failed_polls polls in a row fit inside it under the withdraw policy,
// and names a count that does not.
func TestWarningsRestartWindow(t *testing.T) {
	tests := []struct {
		interval time.Duration
		polls    int
		policy   Action
		want     string // "" = no warning
	}{
		{3 * time.Second, 3, Withdraw, ""},                            // the default: 6 s
		{time.Second, 3, Withdraw, "use max_failed_polls: 5 or more"}, // flapped on a real APISIX
		{time.Second, 5, Withdraw, ""},
		{2 * time.Second, 2, Withdraw, "use max_failed_polls: 3 or more"},
		{time.Second, 3, Announce, ""}, // a failed poll withdraws nothing
		{200 * time.Millisecond, 20, Withdraw, "use max_failed_polls: 21 or more"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.interval, "x", tt.polls, tt.policy), func(t *testing.T) {
			c := Default()
			c.PollInterval, c.FailurePolicy.MaxFailedPolls, c.FailurePolicy.ControlAPIUnreachable = tt.interval, tt.polls, tt.policy
			w := restartWarning(&c)
			if tt.want == "" && w != "" || tt.want != "" && !strings.Contains(w, tt.want) {
				t.Errorf("restartWarning = %q, want %q", w, tt.want)
			}
			if tt.want != "" && !strings.HasPrefix(w, "failure_policy.max_failed_polls: ") {
				t.Errorf("warning %q does not name its key", w)
			}
		})
	}
}

// The budget check warns when the watched upstreams cost APISIX more than
// apisix_poll_budget at apisix_poll_interval, counting two spellings of one
// resource once.
func TestWarningsPollBudget(t *testing.T) {
	conf := func(n int, interval time.Duration, budget Percent) *Config {
		c := Default()
		c.PollInterval, c.PollBudget = interval, budget
		c.keys = apisixKeys
		for i := range n {
			c.VIPs = append(c.VIPs, VIP{Upstreams: health.Upstreams(fmt.Sprint("/apisix/upstreams/u", i), fmt.Sprint("/upstreams/u", i))})
		}
		return &c
	}
	tests := []struct {
		name string
		c    *Config
		want string
	}{
		{"100 at 3s", conf(100, 3*time.Second, 1), ""},
		{"1,000 at 3s", conf(1000, 3*time.Second, 1), "too short for 1000 upstreams"},
		{"100 at 200ms", conf(100, 200*time.Millisecond, 1), "too short for 100 upstreams"},
		{"1,000 at 3s, no budget", conf(1000, 3*time.Second, 0), ""},
		{"3,000 at 200ms", conf(3000, 200*time.Millisecond, 1), "rhi will poll every 9.3s or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := budgetWarning(tt.c)
			if tt.want == "" && w != "" || tt.want != "" && !strings.Contains(w, tt.want) {
				t.Errorf("budgetWarning = %q, want %q", w, tt.want)
			}
		})
	}
}

func TestParseFastPollInterval(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "0s": 0, "100ms": 100 * time.Millisecond, "1": time.Second} {
		if d, is := parseFastPollInterval(in); !is.ok() || d != want {
			t.Errorf("%q: %v %v, want %v", in, d, is, want)
		}
	}
	for _, in := range []string{"5ms", "-1s", "soon", ""} {
		if _, is := parseFastPollInterval(in); is.ok() {
			t.Errorf("%q accepted", in)
		}
	}
}
