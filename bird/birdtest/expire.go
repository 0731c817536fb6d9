package birdtest

import (
	"context"
	"sync"
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
