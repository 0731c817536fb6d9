// Package status defines what the daemon reports about itself: the /status
// JSON (Status, wire.go), which the daemon builds and the CLI and the lab
// tests decode, the Source that gives it, and the verdicts read from it
// (Judge for /healthz and rhi_ready, Healthy for the watchdog). It does no
// I/O and imports nothing of the daemon; package statushttp serves it.
package status

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Source is where status comes from (the daemon, which builds it). Status
// must be safe to call from any goroutine.
type Source interface {
	Status() Status
}

// Summarizer is a Source that also gives its Status without the lists
// that grow with the VIPs (VIPs, Interface.Foreign, Withdrawing,
// Unmanaged; Drain.Count 0), every other field as Status has it: what
// Judge and Healthy read, for a fraction of the cost at 10,000 VIPs.
type Summarizer interface {
	Summary() Status
}

// SummaryOf is src's Summary if it has one, else its Status: enough for
// Judge and Healthy either way.
func SummaryOf(src Source) Status {
	if s, ok := src.(Summarizer); ok {
		return s.Summary()
	}
	return src.Status()
}

// Versioned is a Source that tells cheaply when its Status changes:
// StatusVersion returns a number that grows whenever Status would return
// something different (it may grow without a change), and true; false
// when it cannot tell. The handlers render a Versioned Source's Status
// once per version and share the bytes among every reader; a Source that
// cannot tell is rendered for each request (still one render at a time).
// It must be safe to call from any goroutine.
type Versioned interface {
	StatusVersion() (uint64, bool)
}

// Healthy says whether the loop is turning: it has ticked, and the last poll
// started recently enough for the poll interval and timeout in force. It
// says nothing of APISIX's or BIRD's health, which /status reports. The
// systemd watchdog uses it: a restart mends a stuck loop, not a refused
// write nor a dead control API, which Judge reports.
func Healthy(s Status, now time.Time) error {
	if !s.Ready {
		return errors.New("not ready: no tick yet")
	}
	api := s.ControlAPI
	limit := 2*api.Interval() + api.Timeout + 10*time.Second
	if age := now.Sub(api.LastPoll); age > limit {
		return fmt.Errorf("stalled: last poll %s ago (limit %s)", age.Round(time.Millisecond), limit)
	}
	return nil
}

// stallIntervals is how many poll intervals (plus the poll timeout) may
// pass without a finished tick before /healthz calls the loop stalled: one
// tick may run a whole timeout late and the next be skipped (the ticker
// drops a tick the loop was too busy for), and a third leaves room for an
// interface write that is slow but not stuck.
const stallIntervals = 3

// Judge is the /healthz verdict (nil: healthy) and what rhi_ready says. The
// daemon is unhealthy when
//   - it has not ticked yet;
//   - no tick finished for stallIntervals poll intervals plus the poll
//     timeout (the loop has stalled);
//   - the interface could not be written in the last max_failed_polls
//     ticks (no CAP_NET_ADMIN, the interface missing, the kernel refusing):
//     rhi cannot announce or withdraw anything;
//   - the last max_failed_polls polls settled no VIP (the control API told
//     rhi nothing): rhi decides by failure policy alone.
//
// BIRD's side is not judged here: BIRD down is no reason to restart or
// stop probing rhi; rhi_bird_up and /status report it. The error says why
// in one line. It is pure: now is the only clock.
func Judge(s Status, now time.Time) error {
	if !s.Ready {
		return errors.New("not ready: no tick yet")
	}
	api := s.ControlAPI
	limit := stallIntervals*api.Interval() + api.Timeout
	if age := now.Sub(s.LastTick); age > limit {
		return fmt.Errorf("stalled: no tick finished for %s (limit %s: %d poll intervals and the timeout)",
			age.Round(time.Millisecond), limit, stallIntervals)
	}
	ticks := max(api.MaxFailedPolls, 1)
	if in := s.Interface; in.FailedWrites >= ticks {
		return fmt.Errorf("interface %s could not be written in the last %d ticks (max_failed_polls %d): %s",
			in.Name, in.FailedWrites, api.MaxFailedPolls, strings.ReplaceAll(in.Error, "\n", "; "))
	}
	if api.UnsettledPolls >= ticks {
		last := "none since start"
		if !api.LastSettled.IsZero() {
			last = "last " + now.Sub(api.LastSettled).Round(time.Millisecond).String() + " ago"
		}
		return fmt.Errorf("control API: the last %d polls settled no VIP (max_failed_polls %d; %s)",
			api.UnsettledPolls, api.MaxFailedPolls, last)
	}
	return nil
}
