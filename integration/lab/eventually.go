package lab

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Defaults of [Eventually].
const (
	// DefaultWait bounds a wait whose caller gives no limit and whose context
	// has no deadline.
	DefaultWait = 30 * time.Second
	// DefaultEvery is how often a condition is checked by default.
	DefaultEvery = 20 * time.Millisecond
)

// stopError ends [Eventually] at once; see [Stop].
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// Stop wraps err so that [Eventually] returns it at once instead of trying
// again: for a check that sees the wait cannot succeed (the process it waits
// for has exited, say).
func Stop(err error) error { return stopError{err} }

// Eventually calls check every `every` until it returns nil, and returns nil
// then. It is the one way the lab, its tests and the lab commands wait for
// something that happens in another process.
//
// It always ends: it gives up after limit, or when ctx ends, whichever comes
// first. A zero limit means ctx's deadline, or [DefaultWait] when ctx has
// none; a zero every means [DefaultEvery]. check's errors are not final (the
// state it looks at may be in flux), except one made with [Stop], which ends
// the wait at once and is returned unwrapped. When the wait gives up, the
// error says after how long and how many checks, wraps the context's error
// (errors.Is(err, context.DeadlineExceeded) holds) and check's last
// complaint.
func Eventually(ctx context.Context, limit, every time.Duration, check func(context.Context) error) error {
	if every <= 0 {
		every = DefaultEvery
	}
	if _, ok := ctx.Deadline(); !ok && limit <= 0 {
		limit = DefaultWait
	}
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for checks := 1; ; checks++ {
		err := check(ctx)
		if err == nil {
			return nil
		}
		var stop stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up after %s and %d checks: %w; last check: %w",
				time.Since(start).Round(time.Millisecond), checks, ctx.Err(), err)
		case <-tick.C:
		}
	}
}
