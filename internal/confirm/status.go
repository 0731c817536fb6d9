package confirm

import (
	"encoding/json"
	"math"
	"time"

	"github.com/rhi-daemon/rhi/internal/router"
)

// Status is BIRD's side of the daemon's status (/status "bird").
type Status struct {
	Enabled   bool      `json:"enabled"`
	Socket    string    `json:"socket,omitempty"`
	LastCheck time.Time `json:"last_check,omitzero"`
	// LastOK is the end of the last check that BIRD answered; after an
	// Error it tells how long BIRD has been away.
	LastOK    time.Time              `json:"last_ok,omitzero"`
	Error     string                 `json:"error,omitempty"` // could not check
	Protocols []router.ProtocolState `json:"protocols,omitempty"`
	Problems  []string               `json:"problems,omitempty"`
	Agree     int                    `json:"vips_agreeing"`
	Disagree  int                    `json:"vips_disagreeing"`
}

// VIP is what BIRD said about one VIP in the last check (/status
// vips[].bird), and, unexported, the story of its current disagreement
// that Step carries from one check to the next.
type VIP struct {
	// Expected is what the check held BIRD to: a record made before a
	// drain was checked against "present", and must not be read as the
	// drain's confirmation.
	Expected router.Expectation `json:"expected"`
	Agrees   bool               `json:"agrees"`
	// LastResort: the check held BIRD to the last-resort tier's marks
	// (GRACEFUL_SHUTDOWN, the largest prepend): with Agrees, BIRD exports
	// the VIP as last resort, the first step of a drain.
	LastResort bool `json:"last_resort,omitempty"`
	// Stale: the checks since this record could not reach BIRD, so it
	// says what BIRD said then, not now.
	Stale     bool            `json:"stale,omitempty"`
	Problem   string          `json:"problem,omitempty"`
	InTable   bool            `json:"in_bird_table"`
	Exported  map[string]bool `json:"exported,omitempty"`
	CheckedAt time.Time       `json:"checked_at,omitzero"`
	// Latency is how long BIRD took to agree: from the VIP's last change
	// or, when BIRD agreed with that change and then stopped (a restart,
	// a missed notification), from when that disagreement was first seen.
	// Zero while it disagrees. JSON: confirm_latency_seconds, left out
	// when zero (see MarshalJSON).
	Latency time.Duration `json:"-"`
	// DisagreeingSince is when the current disagreement was first seen;
	// zero, and left out of the JSON, while BIRD agrees.
	DisagreeingSince time.Time `json:"disagreeing_since,omitzero"`
	// Renewed counts address renewals done to make BIRD see a change it
	// missed.
	Renewed int `json:"renewed,omitempty"`

	changedAt time.Time // the change this record is about
	warned    bool
	agreed    bool // BIRD agreed at least once since changedAt
	tries     int  // renewals of the current disagreement
	gaveUp    bool // tries ran out and that was logged
}

// vipJSON is VIP without its methods, for MarshalJSON.
type vipJSON VIP

// vipWire is VIP as JSON: the latency as float seconds, left out while
// there is none.
type vipWire struct {
	vipJSON
	Latency float64 `json:"confirm_latency_seconds,omitempty"`
}

// MarshalJSON writes the latency as float seconds.
func (v VIP) MarshalJSON() ([]byte, error) {
	return json.Marshal(vipWire{vipJSON(v), v.Latency.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *VIP) UnmarshalJSON(b []byte) error {
	var w vipWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*v = VIP(w.vipJSON)
	v.Latency = time.Duration(math.Round(w.Latency * float64(time.Second))) // to the nanosecond
	return nil
}
