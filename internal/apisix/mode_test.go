package apisix_test

import (
	"testing"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
)

// config.PollMode and apisix.Mode spell the same words: cmd/rhi converts one
// into the other, so every mode the config accepts must be one the client
// knows, and mean the same one.
func TestConfigPollModesAreClientModes(t *testing.T) {
	same := map[config.PollMode]apisix.Mode{
		config.PollPerUpstream: apisix.ModePerUpstream,
		config.PollList:        apisix.ModeList,
		config.PollAuto:        apisix.ModeAuto,
	}
	for pm, m := range same {
		if apisix.Mode(pm) != m {
			t.Errorf("config %q is client mode %q", pm, m)
		}
		if _, err := apisix.NewClient("http://127.0.0.1:9090", apisix.Options{Mode: apisix.Mode(pm)}); err != nil {
			t.Errorf("config mode %q: %v", pm, err)
		}
	}
	if c := config.Default(); apisix.Mode(c.PollMode) != apisix.ModeAuto {
		t.Errorf("default poll mode %q, want the client's default %q", c.PollMode, apisix.ModeAuto)
	}
}
