package main

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/status"
)

// TestDrainPending: what keeps a drain from being confirmed, one rule at a
// time. The confirmation BIRD gives must be of a check made after the drain
// was recorded (since): an agreeing check from before it was made against
// the state before the drain.
func TestDrainPending(t *testing.T) {
	since := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	const a = "10.0.0.101/32"
	withdrawn := func(b *status.VIPConfirm) status.Status {
		return status.Status{Bird: status.BirdStatus{Enabled: true},
			VIPs: []status.VIPStatus{{Address: a, Drained: true, Bird: b}}}
	}
	agrees := func(at time.Time) *status.VIPConfirm {
		return &status.VIPConfirm{Expected: router.Absent, Agrees: true, CheckedAt: at}
	}
	cases := []struct {
		name string
		st   status.Status
		want []string
	}{
		{"confirmed", withdrawn(agrees(since.Add(time.Millisecond))), nil},
		{"checked at the drain's own instant", withdrawn(agrees(since)), nil},
		{"checked before the drain", withdrawn(agrees(since.Add(-time.Millisecond))), []string{a + ": BIRD not asked yet"}},
		{"no check yet", withdrawn(nil), []string{a + ": BIRD not asked yet"}},
		{"stale check", withdrawn(&status.VIPConfirm{Expected: router.Absent, Agrees: true, Stale: true, CheckedAt: since.Add(time.Second)}),
			[]string{a + ": BIRD not asked yet"}},
		{"checked against the old expectation", withdrawn(&status.VIPConfirm{Expected: router.Present, Agrees: true, CheckedAt: since.Add(time.Second)}),
			[]string{a + ": BIRD not asked yet"}},
		{"BIRD disagrees", withdrawn(&status.VIPConfirm{Expected: router.Absent, Problem: "still exported", CheckedAt: since.Add(time.Second)}),
			[]string{a + ": BIRD disagrees: still exported"}},
		{"not read yet", status.Status{VIPs: []status.VIPStatus{{Address: a}}}, []string{a + ": the daemon has not read the drain file yet"}},
		{"still on the interface", status.Status{VIPs: []status.VIPStatus{{Address: a, Drained: true, OnInterface: true}}}, []string{a + ": still on the interface"}},
		{"BIRD off: the interface is enough", status.Status{VIPs: []status.VIPStatus{{Address: a, Drained: true}}}, nil},
		{"unknown to the daemon", status.Status{}, []string{a + ": not a VIP of the running daemon (its configuration differs from the file: reload it)"}},
	}
	for _, c := range cases {
		got := drainPending(c.st, map[string]bool{a: true}, true, since)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %s", c.name, cmp.Diff(c.want, got))
		}
	}
}
