package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/status"
)

// How a reload's outcome is known, and where it is recorded: the file is
// loaded and checked (config.Diff rejects restart-only keys) by reload on
// the signal goroutine, which alone knows a rejection; an accepted config
// is applied by the daemon's loop, which closes the channel Reload returns.
// reloadAttempt runs one attempt from start to outcome (it waits for the
// loop) and records it in a reloadState, which /status shows through
// withReload. Attempts never overlap (serveSignals runs one at a time), so
// the generation that ends is the one that began.

// reloadState is the reloads' record for /status; safe for concurrent use.
type reloadState struct {
	mu      sync.Mutex
	st      status.ReloadStatus
	changes uint64 // begins and finishes: st changes only when it grows
	now     func() time.Time
}

// begin starts attempt Generation+1 and returns its number.
func (r *reloadState) begin() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes++
	r.st.Generation++
	r.st.InProgress = true
	r.st.LastAt = r.now()
	r.st.LastError = ""
	return r.st.Generation
}

// finish records the outcome of attempt gen: applied when err is nil.
func (r *reloadState) finish(gen uint64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.st.Generation {
		return // not the attempt in progress (cannot happen: attempts are serial)
	}
	r.changes++
	r.st.InProgress = false
	if err != nil {
		r.st.LastError = err.Error()
		return
	}
	r.st.AppliedGeneration = gen
}

func (r *reloadState) get() status.ReloadStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// withReload is the daemon's status with the reloads' record in it: the
// Source that /status and /healthz read.
type withReload struct {
	d interface{ Status() status.Status }
	r *reloadState
}

func (w withReload) Status() status.Status {
	s := w.d.Status()
	s.Reload = w.r.get()
	return s
}

// /healthz finds Summary, and the status handlers StatusVersion, by these
// interfaces.
var (
	_ status.Summarizer = withReload{}
	_ status.Versioned  = withReload{}
)

// StatusVersion grows whenever Status would say something new: the
// daemon's version (both only grow, so their sum grows when either does)
// plus the reload record's changes; none (false) if the daemon has none.
func (w withReload) StatusVersion() (uint64, bool) {
	d, ok := w.d.(status.Versioned)
	if !ok {
		return 0, false
	}
	dv, ok := d.StatusVersion()
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return dv + w.r.changes, ok
}

// Summary is Status without the per-VIP lists (status.Summarizer), for
// /healthz.
func (w withReload) Summary() status.Status {
	s := status.SummaryOf(w.d)
	s.Reload = w.r.get()
	return s
}

// reloadAttempt is one reload, from SIGHUP to outcome: it records the
// attempt in state, tells systemd RELOADING=1, loads and checks the file
// (reload), waits until the loop has applied an accepted config, records
// the outcome, and tells systemd READY=1 with a STATUS= line saying it. It
// returns whether the config was applied; false too when ctx ends first
// (the daemon is stopping: nothing more is recorded).
func reloadAttempt(ctx context.Context, path string, started *config.Config, d reloader, state *reloadState, notify func(string), log logrus.FieldLogger) bool {
	gen := state.begin()
	notify(reloadingNotice(monotonicUsec()))
	applied, err := reload(path, started, d, log)
	if err == nil {
		select {
		case <-applied:
		case <-ctx.Done():
			return false
		}
	}
	// systemd first: `rhi reload` (ExecReload) may exit as soon as /status
	// shows the outcome, and systemd's reload should end with READY=1 seen.
	notify(reloadedNotice(gen, err))
	state.finish(gen, err)
	return err == nil
}

// reloadingNotice is what systemd is told when a reload begins: with
// Type=notify-reload (systemd 253 and later) it wants the monotonic time.
func reloadingNotice(usec uint64) string {
	return fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", usec)
}

// reloadedNotice is what systemd is told when attempt gen ends: READY=1 and
// the outcome on one STATUS= line ("reload 7 applied", "reload 8 rejected:
// …").
func reloadedNotice(gen uint64, err error) string {
	if err == nil {
		return fmt.Sprintf("READY=1\nSTATUS=reload %d applied", gen)
	}
	reason := strings.Join(strings.Fields(err.Error()), " ") // one line
	return fmt.Sprintf("READY=1\nSTATUS=reload %d rejected: %s", gen, reason)
}
