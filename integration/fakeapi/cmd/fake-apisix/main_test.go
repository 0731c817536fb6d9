//go:build integration

package main

import (
	"testing"
	"time"
)

// Each bad value is refused with a message naming the flag and the value,
// the same messages the fake printed before its flags had a type of their
// own; the defaults pass.
func TestFlagsCheck(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(f *flags)
		want string
	}{
		{"defaults", func(*flags) {}, ""},
		{"no control", func(f *flags) { *f.control = "" }, "--control is required"},
		{"workers", func(f *flags) { *f.workers = 0 }, "--workers: 0, want 1-254"},
		{"successes", func(f *flags) { *f.successes = 255 }, "--successes: 255, want 1-254"},
		{"tcp failures", func(f *flags) { *f.tcpFailures = -1 }, "--tcp-failures: -1, want 1-254"},
		{"http failures", func(f *flags) { *f.httpFailures = 0 }, "--http-failures: 0, want 1-254"},
		{"timeouts", func(f *flags) { *f.timeouts = 0 }, "--timeouts: 0, want 1-254"},
		{"probing worker", func(f *flags) { *f.probing = 2 }, "--probing-worker: 2, want 0-1 (--workers)"},
		{"upstreams", func(f *flags) { *f.upstreams = 100001 }, "--upstreams 100001 --nodes 2: want 0-100000 and 0-100"},
		{"nodes", func(f *flags) { *f.nodes = -1 }, "--upstreams 0 --nodes -1: want 0-100000 and 0-100"},
		{"interval", func(f *flags) { *f.interval = 0 }, "--interval: want a duration > 0"},
		{"purge delay", func(f *flags) { *f.purgeDelay = -time.Second }, "--purge-delay: want a duration > 0"},
		{"cost data", func(f *flags) { *f.costData = -1 }, "--cost-data and --spin: want durations >= 0"},
		{"spin", func(f *flags) { *f.spin = -1 }, "--cost-data and --spin: want durations >= 0"},
		{"lazy without checks", func(f *flags) { *f.lazy = true }, "--lazy needs --checks"},
		{"lazy with checks", func(f *flags) { *f.lazy, *f.checks = true, true }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, code := parseFlags([]string{"--control", "/run/fake.sock"})
			if f == nil {
				t.Fatalf("parseFlags: exit %d", code)
			}
			tt.set(f)
			got := ""
			if err := f.check(); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("check() = %q, want %q", got, tt.want)
			}
		})
	}
}

// A flag the fake does not know, or a malformed value, exits 2; -h exits
// 0; neither builds a fake.
func TestParseFlagsExit(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"--control", "x", "--no-such-flag"}, 2},
		{[]string{"--control", "x", "--interval", "soon"}, 2},
		{[]string{"--workers", "0"}, 2},
		{[]string{"-h"}, 0},
	} {
		if f, code := parseFlags(tt.args); f != nil || code != tt.code {
			t.Errorf("parseFlags(%q) = %v, %d; want nil, %d", tt.args, f, code, tt.code)
		}
	}
}
