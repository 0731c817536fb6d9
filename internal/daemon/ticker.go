package daemon

import "time"

// ticker is the part of *time.Ticker the loop uses; tests inject their own
// (Daemon.newTicker) to drive the loop tick by tick instead of waiting.
type ticker interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

// realTicker is a *time.Ticker as a ticker.
type realTicker struct{ t *time.Ticker }

func newRealTicker(d time.Duration) ticker { return realTicker{time.NewTicker(d)} }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTicker) Stop()                 { r.t.Stop() }
