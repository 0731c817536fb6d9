package apisixtest

import "time"

// SetCostClock replaces the real time the serving loops run on: now tells
// when a request arrives, and wait is called with each time a request must
// wait until (its start on the loop, then its finish).
func SetCostClock(s *Server, now func() time.Time, wait func(time.Time)) {
	s.costNow, s.wait = now, wait
	s.ResetAccounting()
}
