package lab

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEventuallySucceeds(t *testing.T) {
	calls := 0
	err := Eventually(t.Context(), time.Minute, time.Millisecond, func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("Eventually() = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestEventuallyStop(t *testing.T) {
	gone := errors.New("process exited")
	calls := 0
	err := Eventually(t.Context(), time.Minute, time.Millisecond, func(context.Context) error {
		calls++
		return Stop(gone)
	})
	if err != gone || calls != 1 {
		t.Errorf("Eventually() = %v after %d calls, want the stop error itself after 1", err, calls)
	}
}

// TestEventuallyGivesUp: the limit bounds the wait, and the error says why
// with the last complaint; a context that ends first ends it too.
func TestEventuallyGivesUp(t *testing.T) {
	err := Eventually(t.Context(), 30*time.Millisecond, time.Millisecond, func(context.Context) error {
		return errors.New("route still there")
	})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "last check: route still there") ||
		!strings.HasPrefix(err.Error(), "gave up after ") {
		t.Errorf("Eventually() = %v, want a deadline naming the last check", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = Eventually(ctx, time.Hour, time.Millisecond, func(context.Context) error { return errors.New("no") })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Eventually(cancelled) = %v, want context.Canceled", err)
	}
}

// TestEventuallyBounded: with no limit and no deadline it still ends, at
// DefaultWait; the check sees a context with that deadline.
func TestEventuallyBounded(t *testing.T) {
	// The deadline is DefaultWait after a moment between before and
	// after: exact bounds, whatever the machine's load.
	var dl time.Time
	before := time.Now()
	err := Eventually(t.Context(), 0, 0, func(ctx context.Context) error {
		var ok bool
		if dl, ok = ctx.Deadline(); !ok {
			return Stop(errors.New("no deadline"))
		}
		return nil
	})
	after := time.Now()
	if err != nil || dl.Before(before.Add(DefaultWait)) || dl.After(after.Add(DefaultWait)) {
		t.Errorf("check's deadline %s after the call began (%v), want %s (the call took %s)", dl.Sub(before), err, DefaultWait, after.Sub(before))
	}
}
