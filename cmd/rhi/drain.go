package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/internal/daemon"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/verify"
)

// cmdDrain is `rhi drain` (drain true) and `rhi undrain` (drain false): it
// records the change in drain_file, then waits for the running daemon to
// apply it and for BIRD to confirm.
func cmdDrain(name string, on bool, args []string, stdout, stderr io.Writer) int {
	fs := flags(name, "[--config PATH] [--timeout D] [--no-wait] (--all | VIP...)", stdout, stderr)
	path := fs.String("config", defaultConfig, "configuration file")
	all := fs.Bool("all", false, "every VIP of the configuration")
	noWait := fs.Bool("no-wait", false, "record the change and return without waiting for the daemon")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the daemon and BIRD to confirm")
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if *all == (fs.NArg() > 0) {
		fmt.Fprintf(stderr, "rhi %s: name VIPs or give --all (not both)\n", name)
		return exitBadInput
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return exitBadInput
	}
	configured := map[netip.Prefix]bool{}
	for _, v := range cfg.VIPs {
		configured[v.Address] = true
	}
	var targets []netip.Prefix
	for _, a := range fs.Args() {
		p, err := drain.ParsePrefix(a)
		if err != nil || !configured[p] {
			fmt.Fprintf(stderr, "rhi %s: %q is not a VIP of %s\n", name, a, *path)
			return exitBadInput
		}
		targets = append(targets, p)
	}
	if *all {
		for _, v := range cfg.VIPs {
			targets = append(targets, v.Address)
		}
	}

	set, err := drain.Read(cfg.DrainFile)
	if err != nil {
		fmt.Fprintf(stderr, "rhi %s: %v\n", name, err)
		return exitFailure
	}
	switch {
	case on && *all:
		set.All = true
	case on:
		for _, p := range targets {
			set.VIPs[p] = true
		}
	case *all:
		set = drain.Set{VIPs: map[netip.Prefix]bool{}}
	default:
		if set.All {
			// "all" minus these: spell out the others, so they stay drained.
			set.All = false
			for p := range configured {
				set.VIPs[p] = true
			}
		}
		for _, p := range targets {
			delete(set.VIPs, p)
		}
	}
	if err := os.MkdirAll(filepath.Dir(cfg.DrainFile), 0o750); err != nil {
		fmt.Fprintf(stderr, "rhi %s: %v\n", name, err)
		return exitFailure
	}
	if err := drain.Write(cfg.DrainFile, set); err != nil {
		fmt.Fprintf(stderr, "rhi %s: %v\n", name, err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "recorded in %s: %d VIP(s) %sed\n", cfg.DrainFile, len(targets), name)
	if *noWait {
		return exitOK
	}
	if cfg.StatusListen == "" {
		fmt.Fprintf(stderr, "rhi %s: status_listen is empty: cannot ask the daemon whether it applied the change\n", name)
		return exitFailure
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return waitDrain(ctx, cfg.StatusListen, on, targets, time.Now(), stdout, stderr)
}

// waitDrain polls the daemon's status until every target shows the drain
// state on and, for a drain, is off the interface with BIRD confirming it
// is exported nowhere.
func waitDrain(ctx context.Context, addr string, on bool, targets []netip.Prefix, since time.Time, stdout, stderr io.Writer) int {
	want := map[string]bool{}
	for _, p := range targets {
		want[p.String()] = true
	}
	var last daemon.Status
	var lastErr error
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, st, err := fetchStatus(rctx, addr)
		cancel()
		lastErr = err
		if err == nil {
			last = st
			if pending := drainPending(st, want, on, since); len(pending) == 0 {
				reportDrain(stdout, st, want, since)
				return exitOK
			}
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				fmt.Fprintf(stderr, "rhi: recorded, but NOT confirmed as applied: %v\n", lastErr)
				return exitFailure
			}
			reportDrain(stdout, last, want, since)
			fmt.Fprintf(stderr, "rhi: not confirmed before the timeout: %s\n", strings.Join(drainPending(last, want, on, since), "; "))
			return exitFailure
		case <-tick.C:
		}
	}
}

// drainPending lists what is still to happen, one entry per VIP.
func drainPending(st daemon.Status, want map[string]bool, on bool, since time.Time) []string {
	var out []string
	known := map[string]bool{}
	for _, v := range st.VIPs {
		if !want[v.Address] {
			continue
		}
		known[v.Address] = true
		expected := verify.Absent
		if v.Desired {
			expected = verify.Present
		}
		switch {
		case v.Drained != on:
			out = append(out, v.Address+": the daemon has not read the drain file yet")
		case on && v.OnInterface:
			out = append(out, v.Address+": still on the interface")
		case !st.Bird.Enabled:
		case v.Bird == nil || v.Bird.CheckedAt.Before(since) || v.Bird.Expected != expected || v.Bird.Stale:
			// A record made before the daemon applied the drain was
			// checked against the state before it.
			out = append(out, v.Address+": BIRD not asked yet")
		case !v.Bird.Agrees:
			out = append(out, v.Address+": BIRD disagrees: "+v.Bird.Problem)
		}
	}
	var unknown []string
	for a := range want {
		if !known[a] {
			unknown = append(unknown, a)
		}
	}
	slices.Sort(unknown)
	for _, a := range unknown {
		out = append(out, a+": not a VIP of the running daemon (its configuration differs from the file: reload it)")
	}
	if st.Bird.Enabled && st.Bird.Error != "" {
		out = append(out, "BIRD unreachable: "+st.Bird.Error)
	}
	return out
}

func reportDrain(w io.Writer, st daemon.Status, want map[string]bool, since time.Time) {
	for _, v := range st.VIPs {
		if !want[v.Address] {
			continue
		}
		state := "drained"
		if !v.Drained {
			state = "undrained"
		}
		where := "withdrawn"
		if v.OnInterface {
			where = "announced"
		}
		bird := "BIRD not confirming"
		if v.Bird != nil {
			bird = "BIRD agrees"
			if !v.Bird.Agrees {
				bird = "BIRD DISAGREES: " + v.Bird.Problem
			}
		}
		fmt.Fprintf(w, "%-20s %-10s %-10s %s (health: %s)\n", v.Address, state, where, bird, v.Verdict)
	}
}
