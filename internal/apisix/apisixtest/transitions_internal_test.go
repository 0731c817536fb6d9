package apisixtest

import (
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/health"
)

// TestTransitionsBounded: however many changes the server has seen, it
// shows the newest MaxTransitions of them, oldest first, and holds at most
// twice that many.
func TestTransitionsBounded(t *testing.T) {
	ref, err := health.ParseRef("/apisix/upstreams/1")
	if err != nil {
		t.Fatal(err)
	}
	s := New()
	defer s.Close()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	seen := 0
	for _, n := range []int{MaxTransitions - 1, 1, 1, MaxTransitions, 3} {
		s.mu.Lock()
		for range n {
			s.record(t0.Add(time.Duration(seen)), ref, "192.0.2.1", 80, "healthy", "unhealthy")
			seen++
		}
		held := len(s.transitions)
		s.mu.Unlock()
		if held > 2*MaxTransitions {
			t.Fatalf("after %d changes the server holds %d, more than twice %d", seen, held, MaxTransitions)
		}
		tr := s.Transitions(ref)
		want := min(seen, MaxTransitions)
		if len(tr) != want {
			t.Fatalf("after %d changes: %d transitions, want %d", seen, len(tr), want)
		}
		for i, x := range tr {
			if got, w := x.Time.Sub(t0), time.Duration(seen-want+i); got != w {
				t.Fatalf("after %d changes: transition %d is change %d, want %d", seen, i, got, w)
			}
		}
	}
}
