package main

import (
	"context"
	"time"
)

// clock is the time the commands that wait for the daemon (`rhi drain`,
// `rhi undrain`, `rhi reload`) wait by: the deadline of --timeout and the
// pace of their retries. Production uses realClock; tests replace
// waitClock so that a deadline passes on cue (at a given wait), or a retry
// goes when the test says, instead of waiting them out.
type clock interface {
	// withTimeout is context.WithTimeout.
	withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
	// pacer paces a retry loop at one try every d.
	pacer(d time.Duration) pacer
}

// A pacer paces a retry loop; stop releases it.
type pacer interface {
	// wait returns nil when the next try is due, or ctx's error once
	// ctx ends first.
	wait(ctx context.Context) error
	stop()
}

// waitClock is the clock of the commands that wait; tests replace it.
var waitClock clock = realClock{}

// realClock is the system's clock.
type realClock struct{}

func (realClock) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

func (realClock) pacer(d time.Duration) pacer {
	t := time.NewTicker(d)
	return tickPacer{c: t.C, end: t.Stop}
}

// tickPacer lets a try go at each tick of c.
type tickPacer struct {
	c   <-chan time.Time
	end func()
}

func (p tickPacer) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.c:
		return nil
	}
}

func (p tickPacer) stop() { p.end() }
