package birdtest

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Expire returns a context like parent whose deadline passes when at is
// closed: from then on Done is closed and Err is context.DeadlineExceeded,
// as if the deadline had come. It ends earlier, with parent's error, when
// parent ends, and with context.Canceled when cancel is called. Deadline
// and Value are parent's.
//
// It stands for a deadline that arrives while BIRD stalls: with at =
// Server.Stalled(), the exchanges before the stall keep parent's generous
// deadline, and the stalled one ends at once, as it would at a real
// deadline, without the test waiting for one.
func Expire(parent context.Context, at <-chan struct{}) (ctx context.Context, cancel context.CancelFunc) {
	e := &expiring{Context: parent, done: make(chan struct{})}
	stop := make(chan struct{})
	go func() {
		select {
		case <-at:
			e.end(context.DeadlineExceeded)
		case <-parent.Done():
			e.end(parent.Err())
		case <-stop:
			e.end(context.Canceled)
		}
	}()
	var once sync.Once
	return e, func() { once.Do(func() { close(stop) }) }
}

type expiring struct {
	context.Context // parent: Deadline and Value (Expire moves no clock)
	done            chan struct{}
	mu              sync.Mutex
	err             error
}

func (e *expiring) end(err error) {
	e.mu.Lock()
	e.err = err
	e.mu.Unlock()
	close(e.done)
}

func (e *expiring) Done() <-chan struct{} { return e.done }

func (e *expiring) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Deadlines watches the exchanges of a client that must give each one a
// deadline of its own: at most Timeout away (so not only the caller's
// longer one) and later than the previous exchange's (so not one computed
// once for them all). Each breach is added to Problems. A client's
// exchange passes through Enter, between the deadline and the connection.
type Deadlines struct {
	Timeout time.Duration
	// Stalled, when set (Server.Stalled), ends the exchange under way at
	// the stall, as its deadline would (see Expire).
	Stalled  <-chan struct{}
	Problems []string
	last     time.Time
}

// Enter checks the deadline of ctx, the context of cmd's exchange, and
// returns the context to run the exchange under; cancel it after.
func (d *Deadlines) Enter(ctx context.Context, cmd string) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	switch {
	case !ok:
		d.Problems = append(d.Problems, fmt.Sprintf("%q: no deadline", cmd))
	case dl.After(time.Now().Add(d.Timeout)):
		d.Problems = append(d.Problems, fmt.Sprintf("%q: deadline %v away, more than the exchange timeout %v", cmd, time.Until(dl), d.Timeout))
	case !dl.After(d.last):
		d.Problems = append(d.Problems, fmt.Sprintf("%q: deadline %v, not after the previous exchange's %v", cmd, dl, d.last))
	}
	d.last = dl
	if d.Stalled == nil {
		return context.WithCancel(ctx)
	}
	return Expire(ctx, d.Stalled)
}
