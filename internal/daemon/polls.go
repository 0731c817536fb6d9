package daemon

import (
	"time"

	"github.com/rhi-daemon/rhi/internal/status"
)

// pollStats counts the loop's polls of the control API for /status and
// /healthz. The loop alone changes it; views take copies.
type pollStats struct {
	polls      uint64 // polls, ever
	failedAll  uint64 // polls with at least one unreadable upstream, ever
	failed     int    // such polls in a row
	unreadable int    // upstreams the last poll could not read
	unsettled  int    // polls in a row that settled no VIP
	settledAt  time.Time
	polling    status.PollingStatus // the pace of the polls (fastpoll.go, budget.go)
}

// polled counts one poll in which unreadable upstreams could not be read.
func (s *pollStats) polled(unreadable int) {
	s.polls++
	s.unreadable = unreadable
	if unreadable > 0 {
		s.failed++
		s.failedAll++
		return
	}
	s.failed = 0
}

// settled counts a poll that ended at end and settled at least one VIP
// (told rhi whether it is available) or none.
func (s *pollStats) settled(any bool, end time.Time) {
	if any {
		s.unsettled, s.settledAt = 0, end
		return
	}
	s.unsettled++
}
