package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// cueCtx is a context whose deadline passes when the test says so (expire),
// not with time: its Err is then context.DeadlineExceeded, as a real
// deadline's would be. It ends with its parent too.
type cueCtx struct {
	context.Context // the parent: Value and Deadline
	done            chan struct{}
	once            sync.Once
	mu              sync.Mutex
	err             error
}

func newCue(parent context.Context) *cueCtx {
	c := &cueCtx{Context: parent, done: make(chan struct{})}
	context.AfterFunc(parent, func() { c.end(parent.Err()) })
	return c
}

func (c *cueCtx) Done() <-chan struct{} { return c.done }

func (c *cueCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *cueCtx) end(err error) {
	c.once.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
	})
}

// expire makes the deadline pass.
func (c *cueCtx) expire() { c.end(context.DeadlineExceeded) }

func (c *cueCtx) cancel() { c.end(context.Canceled) }

// cueClock is a clock whose deadlines pass on cue: at the expireAt-th wait
// of its pacers, counted over all of them (never when expireAt is 0). Until
// then every wait returns at once: the next try is due.
type cueClock struct {
	t        *testing.T
	expireAt int

	mu        sync.Mutex
	timeouts  []time.Duration // asked of withTimeout, in order
	deadlines []*cueCtx
	waits     int
}

// useCueClock makes c waitClock for the test's duration.
func useCueClock(t *testing.T, expireAt int) *cueClock {
	t.Helper()
	c := &cueClock{t: t, expireAt: expireAt}
	saved := waitClock
	waitClock = c
	t.Cleanup(func() { waitClock = saved })
	return c
}

func (c *cueClock) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	cue := newCue(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timeouts = append(c.timeouts, d)
	c.deadlines = append(c.deadlines, cue)
	return cue, cue.cancel
}

// Timeouts lists the durations asked of withTimeout.
func (c *cueClock) Timeouts() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.timeouts...)
}

// Waits is the number of waits so far.
func (c *cueClock) Waits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waits
}

func (c *cueClock) pacer(time.Duration) pacer { return cuePacer{c} }

type cuePacer struct{ c *cueClock }

func (p cuePacer) stop() {}

// wait is a tick at once, but for the expireAt-th wait: there every
// deadline of the clock passes, and wait returns when ctx ends, as the
// real pacer does. A ctx that does not end then is not bound by those
// deadlines: that fails the test (after 10 s, a bound for a broken run
// only).
func (p cuePacer) wait(ctx context.Context) error {
	c := p.c
	c.mu.Lock()
	c.waits++
	n, deadlines := c.waits, c.deadlines
	c.mu.Unlock()
	if n == c.expireAt {
		for _, d := range deadlines {
			d.expire()
		}
	}
	if c.expireAt == 0 || n < c.expireAt {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		c.t.Errorf("wait %d: the deadline passed, but the wait's context did not end", n)
		return errors.New("the wait's context did not end")
	}
}

// tickClock is the real clock but for its pacers, which let a try go at
// each receive from ticks.
type tickClock struct {
	realClock
	ticks <-chan time.Time
}

func (c tickClock) pacer(time.Duration) pacer { return tickPacer{c: c.ticks, end: func() {}} }

// useTickClock makes a tickClock of ticks waitClock for the test's
// duration.
func useTickClock(t *testing.T, ticks <-chan time.Time) {
	saved := waitClock
	waitClock = tickClock{ticks: ticks}
	t.Cleanup(func() { waitClock = saved })
}

// TestTickPacer: the real pacer lets a try go at a tick, and returns the
// context's error once it ends.
func TestTickPacer(t *testing.T) {
	ticks := make(chan time.Time, 1)
	p := tickPacer{c: ticks, end: func() {}}
	ticks <- time.Now()
	if err := p.wait(context.Background()); err != nil {
		t.Errorf("at a tick: %v, want nil", err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0)) // passed
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.wait(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("past the deadline, no tick: %v, want %v", err, context.DeadlineExceeded)
		}
	case <-time.After(10 * time.Second): // a bound for a broken pacer only
		t.Fatal("past the deadline, no tick: wait still waits")
	}
}
