package apisixtest

import (
	"testing"
	"time"
)

// TestKeepNewest: however many changes were recorded, the newest limit of
// them are shown, oldest first, and at most twice limit are held.
func TestKeepNewest(t *testing.T) {
	const limit = 3
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var ts []Transition
	seen := 0
	for _, n := range []int{limit - 1, 1, 1, limit, 1, 2*limit + 1} {
		for range n {
			ts = keepNewest(ts, Transition{Time: t0.Add(time.Duration(seen))}, limit)
			seen++
		}
		if len(ts) > 2*limit {
			t.Fatalf("after %d changes %d are held, more than twice %d", seen, len(ts), limit)
		}
		shown := newest(ts, limit)
		want := min(seen, limit)
		if len(shown) != want {
			t.Fatalf("after %d changes: %d shown, want %d", seen, len(shown), want)
		}
		for i, x := range shown {
			if got, w := x.Time.Sub(t0), time.Duration(seen-want+i); got != w {
				t.Fatalf("after %d changes: shown %d is change %d, want %d", seen, i, got, w)
			}
		}
	}
}
