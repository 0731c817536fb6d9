package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/status"
)

// graceDaemon is a daemon that applies a drain of 10.0.0.101 in two steps:
// from the second status on it is in last resort until its deadline, and
// BIRD confirms that from confirmLR on (0: never); from the withdrawnAt-th
// status on it is withdrawn and BIRD confirms that.
func graceDaemon(t *testing.T, confirmLR, withdrawnAt int) string {
	deadline := time.Now().Add(5 * time.Second)
	return fakeDaemon(t, func(n int) status.Status {
		v := status.VIPStatus{Address: "10.0.0.101/32", OnInterface: true, Desired: true, Tier: decide.TierAnnounced}
		switch {
		case n >= withdrawnAt:
			v.Drained, v.OnInterface, v.Desired, v.Tier, v.DrainPhase = true, false, false, decide.TierWithdrawn, "drained"
			v.Bird = &status.VIPConfirm{Expected: router.Absent, Agrees: true, CheckedAt: time.Now()}
		case n >= 2:
			v.Drained, v.Tier, v.OnLastResort, v.DrainPhase, v.DrainDeadline = true, decide.TierLastResort, true, "draining", deadline
			if confirmLR > 0 && n >= confirmLR {
				v.Bird = &status.VIPConfirm{Expected: router.Present, Agrees: true, LastResort: true, CheckedAt: time.Now()}
			} else {
				// A check held to the full tier, from before the drain.
				v.Bird = &status.VIPConfirm{Expected: router.Present, Agrees: true, CheckedAt: time.Now()}
			}
		}
		return status.Status{Ready: true, Bird: status.BirdStatus{Enabled: true}, VIPs: []status.VIPStatus{v}}
	})
}

// TestDrainConfirmsBothSteps: `rhi drain` waits through the grace and
// reports that BIRD exported the VIP as last resort, then nowhere; the
// default --timeout is 30s plus the VIP's drain_grace (5s by default).
func TestDrainConfirmsBothSteps(t *testing.T) {
	cfg, _ := drainConfig(t, graceDaemon(t, 3, 6))
	clock := useCueClock(t, 0)
	var out, errb bytes.Buffer
	if code := run([]string{"drain", "--config", cfg, "10.0.0.101"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "BIRD confirmed (GRACEFUL_SHUTDOWN), then withdrawn") {
		t.Errorf("output does not report the first step:\n%s", out.String())
	}
	checkTimeouts(t, clock, 35*time.Second)
}

// TestDrainFirstStepUnconfirmed: BIRD never confirms the last-resort step
// during the grace: the drain is applied but reported as not confirmed.
func TestDrainFirstStepUnconfirmed(t *testing.T) {
	cfg, _ := drainConfig(t, graceDaemon(t, 0, 5))
	useCueClock(t, 0)
	var out, errb bytes.Buffer
	if code := run([]string{"drain", "--config", cfg, "--timeout", "20s", "10.0.0.101"}, &out, &errb); code != exitFailure {
		t.Fatalf("exit %d, want %d: %s", code, exitFailure, out.String())
	}
	if want := "BIRD was never seen exporting it as last resort"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr %q lacks %q", errb.String(), want)
	}
}

// TestDrainPendingInGrace: a VIP in its grace is pending, saying until
// when.
func TestDrainPendingInGrace(t *testing.T) {
	dl := time.Date(2026, 12, 7, 12, 0, 5, 0, time.UTC)
	st := status.Status{VIPs: []status.VIPStatus{{Address: "10.0.0.101/32", Drained: true, OnInterface: true, DrainPhase: "draining", DrainDeadline: dl}}}
	got := drainPending(st, map[string]bool{"10.0.0.101/32": true}, true, dl.Add(-5*time.Second))
	if len(got) != 1 || got[0] != "10.0.0.101/32: in last resort until 2026-12-07T12:00:05Z (drain_grace)" {
		t.Errorf("pending %q", got)
	}
}

// TestWantCellsDraining: `rhi status` shows a VIP in its grace as
// draining, on the last-resort interface, with nothing amiss.
func TestWantCellsDraining(t *testing.T) {
	v := status.VIPStatus{Drained: true, Desired: true, OnInterface: true, OnLastResort: true, Tier: decide.TierLastResort, DrainPhase: "draining"}
	if want, on := wantCells(v); want != "draining" || on != "lastresort" {
		t.Errorf("cells %q %q, want draining lastresort", want, on)
	}
	v = status.VIPStatus{Drained: true, Tier: decide.TierWithdrawn, DrainPhase: "drained"}
	if want, on := wantCells(v); want != "drained" || on != "absent" {
		t.Errorf("cells %q %q, want drained absent", want, on)
	}
}
