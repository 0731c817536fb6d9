package main

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/status"
)

// fakeSystemd listens where NOTIFY_SOCKET points, as systemd does.
func fakeSystemd(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return c
}

func recv(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	return string(buf[:n])
}

func TestNotifyReadyAndStopping(t *testing.T) {
	c := fakeSystemd(t)
	log, _ := logtest.NewNullLogger()
	notifyReady(log)
	if got := recv(t, c); got != "READY=1" {
		t.Errorf("got %q, want READY=1", got)
	}
	notifyStopping()
	if got := recv(t, c); got != "STOPPING=1" {
		t.Errorf("got %q, want STOPPING=1", got)
	}
}

type statusFunc func() status.Status

func (f statusFunc) Status() status.Status { return f() }

func TestWatchdogPingsThroughSystemd(t *testing.T) {
	c := fakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "20000") // 20 ms: pings every 10 ms
	log, _ := logtest.NewNullLogger()
	now := time.Now()
	healthy := status.Status{Ready: true, ControlAPI: status.APIStatus{LastPoll: now, PollInterval: time.Second, Timeout: time.Second}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go watchdog(ctx, statusFunc(func() status.Status { return healthy }), func() time.Time { return now }, log)
	if got := recv(t, c); got != "WATCHDOG=1" {
		t.Errorf("got %q, want WATCHDOG=1", got)
	}
}

// summaryFunc is a status.Summarizer: Status from one function, Summary
// from the other.
type summaryFunc struct{ status, summary func() status.Status }

func (f summaryFunc) Status() status.Status  { return f.status() }
func (f summaryFunc) Summary() status.Status { return f.summary() }

// TestWatchdogReadsTheSummary: the watchdog judges the daemon's Summary,
// not its whole Status (5 MB at 10,000 VIPs every half interval, issue
// 15): a Status that would fail the test is never built.
func TestWatchdogReadsTheSummary(t *testing.T) {
	c := fakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "20000")
	log, _ := logtest.NewNullLogger()
	now := time.Now()
	healthy := status.Status{Ready: true, ControlAPI: status.APIStatus{LastPoll: now, PollInterval: time.Second, Timeout: time.Second}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := summaryFunc{
		status:  func() status.Status { t.Error("the watchdog built the whole Status"); return status.Status{} },
		summary: func() status.Status { return healthy },
	}
	go watchdog(ctx, src, func() time.Time { return now }, log)
	if got := recv(t, c); got != "WATCHDOG=1" {
		t.Errorf("got %q, want WATCHDOG=1", got)
	}
}

// TestReloadSummary: what /healthz reads through cmd/rhi is the daemon's
// Summary with the reloads' record, as its Status has it.
func TestReloadSummary(t *testing.T) {
	state := &reloadState{now: func() time.Time { return time.Unix(1_700_000_000, 0) }}
	state.begin()
	src := withReload{summaryFunc{
		status: func() status.Status {
			return status.Status{Ready: true, VIPs: []status.VIPStatus{{Address: "10.0.0.1/32"}}}
		},
		summary: func() status.Status { return status.Status{Ready: true, LastTick: time.Unix(5, 0)} },
	}, state}
	got := src.Summary()
	if want := (status.Status{Ready: true, LastTick: time.Unix(5, 0), Reload: src.Status().Reload}); !reflect.DeepEqual(got, want) || got.Reload.Generation == 0 {
		t.Errorf("Summary = %+v, want %+v with the reload recorded", got, want)
	}
}

func TestWatchdogWithholdsPingsWhileStalled(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	ticks := make(chan time.Time, 10)
	for range 10 {
		ticks <- time.Time{}
	}
	// The loop asks for health once per tick and pings through an
	// unbuffered channel, so the test and the loop move in lockstep: a
	// ping where none is due blocks the loop, and the next handoff fails.
	health := make(chan error)
	pings := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		healthy := func() error {
			select {
			case err := <-health:
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		watchdogLoop(ctx, ticks, healthy, func() { pings <- struct{}{} }, log)
		close(done)
	}()
	handoff := func(what string, send func() bool) {
		t.Helper()
		if !send() {
			t.Fatalf("%s: the loop did not follow (a ping where none was due, or none where one was)", what)
		}
	}
	give := func(err error) func() bool {
		return func() bool {
			select {
			case health <- err:
				return true
			case <-time.After(10 * time.Second):
				return false
			}
		}
	}
	ping := func() bool {
		select {
		case <-pings:
			return true
		case <-time.After(10 * time.Second):
			return false
		}
	}
	stalled := errors.New("stalled")
	handoff("healthy tick", give(nil))
	handoff("its ping", ping)
	handoff("stalled tick", give(stalled))
	handoff("stalled again", give(stalled))
	handoff("recovered tick", give(nil))
	handoff("its ping", ping)
	entries := hook.AllEntries()
	cancel()
	<-done
	errorsLogged := 0
	for _, e := range entries {
		if e.Level == logrus.ErrorLevel {
			errorsLogged++
		}
	}
	if errorsLogged != 1 {
		t.Errorf("stall logged %d times, want once", errorsLogged)
	}
}
