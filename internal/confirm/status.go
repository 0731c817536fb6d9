package confirm

import (
	"time"

	"github.com/rhi-daemon/rhi/internal/router"
)

// Status is what the runner knows of BIRD as a whole: whether it checks,
// and what the last check found. The daemon shows it in its status.
type Status struct {
	Enabled   bool
	Socket    string
	LastCheck time.Time
	// LastOK is the end of the last check that BIRD answered; after an
	// Error it tells how long BIRD has been away.
	LastOK    time.Time
	Error     string // could not check
	Protocols []router.ProtocolState
	Problems  []string
	Agree     int
	Disagree  int
}

// VIP is what BIRD said about one VIP in the last check, and, unexported, the story of its current disagreement
// that Step carries from one check to the next.
type VIP struct {
	// Expected is what the check held BIRD to: a record made before a
	// drain was checked against "present", and must not be read as the
	// drain's confirmation.
	Expected router.Expectation
	Agrees   bool
	// LastResort: the check held BIRD to the last-resort tier's marks
	// (GRACEFUL_SHUTDOWN, the largest prepend): with Agrees, BIRD exports
	// the VIP as last resort, the first step of a drain.
	LastResort bool
	// Stale: the checks since this record could not reach BIRD, so it
	// says what BIRD said then, not now.
	Stale     bool
	Problem   string
	InTable   bool
	Exported  map[string]bool
	CheckedAt time.Time
	// Latency is how long BIRD took to agree: from the VIP's last change
	// or, when BIRD agreed with that change and then stopped (a restart,
	// a missed notification), from when that disagreement was first seen.
	// Zero while it disagrees.
	Latency time.Duration
	// DisagreeingSince is when the current disagreement was first seen;
	// zero while BIRD agrees.
	DisagreeingSince time.Time
	// Renewed counts address renewals done to make BIRD see a change it
	// missed.
	Renewed int

	changedAt time.Time // the change this record is about
	warned    bool
	agreed    bool // BIRD agreed at least once since changedAt
	tries     int  // renewals of the current disagreement
	gaveUp    bool // tries ran out and that was logged
}
