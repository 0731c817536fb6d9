package main

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// within fails the test if ch has not delivered in a long time: it guards
// against a handler that hangs, it times nothing.
func within(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: never happened", what)
	}
}

// TestSIGUSR1WhileAReloadHangs: logrotate's SIGUSR1 reopens the logs even
// while a reload is stuck reading the config; SIGHUPs
// during a reload make one more reload, not one each.
func TestSIGUSR1WhileAReloadHangs(t *testing.T) {
	sigs := make(chan os.Signal)
	started := make(chan struct{})
	release := make(chan struct{})
	reopened := make(chan struct{})
	reloads := 0
	reload := func() {
		reloads++
		started <- struct{}{}
		<-release
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		serveSignals(ctx, sigs, reload, func() { reopened <- struct{}{} })
		close(done)
	}()

	sigs <- syscall.SIGHUP
	within(t, "the first reload", started)
	for range 3 {
		sigs <- syscall.SIGHUP
	}
	sigs <- syscall.SIGUSR1
	within(t, "reopening the logs while a reload hangs", reopened)

	release <- struct{}{}
	within(t, "the reload for the SIGHUPs that came during the first", started)
	release <- struct{}{}
	cancel()
	within(t, "serveSignals returning", done)
	if reloads != 2 {
		t.Errorf("%d reloads, want 2 (the first, then one for the three that came during it)", reloads)
	}
}
