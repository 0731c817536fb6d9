package main

import (
	"errors"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/status"
)

// versionedFunc is a Versioned daemon whose version the test sets.
type versionedFunc struct {
	v *uint64
}

func (f versionedFunc) Status() status.Status         { return status.Status{Ready: true} }
func (f versionedFunc) StatusVersion() (uint64, bool) { return *f.v, true }

// TestWithReloadVersion: the status /status renders changes, and so must
// its version, when the daemon's does and when a reload begins or ends;
// without a versioned daemon there is none.
func TestWithReloadVersion(t *testing.T) {
	var dv uint64
	r := &reloadState{now: func() time.Time { return time.Unix(1_700_000_000, 0) }}
	w := withReload{versionedFunc{&dv}, r}
	last, ok := w.StatusVersion()
	if !ok {
		t.Fatal("no version over a versioned daemon")
	}
	step := func(what string, f func()) {
		t.Helper()
		f()
		v, _ := w.StatusVersion()
		if v <= last {
			t.Errorf("%s: version %d, was %d: want it larger", what, v, last)
		}
		last = v
	}
	step("daemon", func() { dv++ })
	gen := uint64(0)
	step("reload begins", func() { gen = r.begin() })
	step("reload ends", func() { r.finish(gen, errors.New("bad")) })
	step("daemon again", func() { dv += 5 })
	if _, ok := (withReload{statusFunc(func() status.Status { return status.Status{} }), r}).StatusVersion(); ok {
		t.Error("a version over a daemon that has none")
	}
}
