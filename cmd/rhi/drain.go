package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/ctlsock"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/status"
)

// cmdDrain is `rhi drain` (drain true) and `rhi undrain` (drain false): it
// checks that the running daemon answers on its control socket, records
// the change in drain_file under a lock shared by every `rhi drain`, then
// waits for the daemon to apply it and for BIRD to confirm. With --no-wait
// it only records the change, daemon or not.
func cmdDrain(name string, on bool, args []string, stdout, stderr io.Writer) int {
	fs := flags(name, "[--config PATH] [--timeout D] [--no-wait] (--all | VIP...)", stdout, stderr)
	path := fs.String("config", defaultConfig, "configuration file")
	all := fs.Bool("all", false, "every VIP of the configuration")
	noWait := fs.Bool("no-wait", false, "record the change and return without asking the daemon")
	timeout := fs.Duration("timeout", 0, "how long to wait for the daemon and BIRD to confirm, both steps of a drain included (default 30s plus the longest drain_grace)")
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
	op, vips := drain.Op{Drain: on, All: *all}, vipsOf(cfg)
	targets, err := drain.Targets(op, fs.Args(), vips)
	if err != nil {
		fmt.Fprintf(stderr, "rhi %s: %v of %s\n", name, err, *path)
		return exitBadInput
	}
	if !*noWait {
		if err := daemonAnswers(cfg.ControlSocket); err != nil {
			fmt.Fprintf(stderr, "rhi %s: %v; nothing recorded (--no-wait records the change for the daemon to apply when it runs)\n", name, err)
			return exitBadInput
		}
	}
	if *timeout <= 0 {
		*timeout = defaultDrainTimeout(cfg, targets, on)
	}
	ctx, cancel := waitClock.withTimeout(context.Background(), *timeout)
	defer cancel()
	if on {
		warnLastSite(ctx, cfg, targets, stderr)
	}
	if err := updateDrain(ctx, cfg.DrainFile, func(set drain.Set) drain.Set { return set.Apply(op, targets, vips) }); err != nil {
		fmt.Fprintf(stderr, "rhi %s: %v\n", name, err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "recorded in %s: %d VIP(s) %sed\n", cfg.DrainFile, len(targets), name)
	if *noWait {
		return exitOK
	}
	return waitDrain(ctx, cfg.ControlSocket, on, targets, time.Now(), stdout, stderr)
}

// drainWait is what --timeout adds to the longest drain_grace by default:
// room for the daemon to read the drain file and for BIRD to confirm each
// step.
const drainWait = 30 * time.Second

// defaultDrainTimeout is --timeout when none is given: drainWait, plus,
// for a drain, the longest drain_grace of the targets, since the wait
// covers both steps.
func defaultDrainTimeout(cfg *config.Config, targets []netip.Prefix, on bool) time.Duration {
	longest := time.Duration(0)
	if on {
		for _, v := range cfg.VIPs {
			if slices.Contains(targets, v.Address) {
				longest = max(longest, v.DrainGrace)
			}
		}
	}
	return drainWait + longest
}

// vipsOf lists cfg's VIPs.
func vipsOf(cfg *config.Config) []netip.Prefix {
	vips := make([]netip.Prefix, 0, len(cfg.VIPs))
	for _, v := range cfg.VIPs {
		vips = append(vips, v.Address)
	}
	return vips
}

// probeTimeout bounds the question that tells whether the daemon runs.
const probeTimeout = 3 * time.Second

// daemonAnswers says why the daemon cannot be asked, if it cannot. Any
// answer to /healthz from a trusted peer will do, healthy or not: it is
// cheap, where /status grows with the VIPs.
func daemonAnswers(socket string) error {
	if socket == "" {
		return errors.New("control_socket is empty: the daemon cannot be asked whether it applies the change")
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://rhi/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := ctlsock.Client{Path: socket}.HTTP().Do(req)
	if err != nil {
		return fmt.Errorf("daemon not reachable on %s: %w", socket, urlCause(err))
	}
	resp.Body.Close()
	return nil
}

// updateDrain changes the drain file with change under an exclusive lock
// on the file beside it (see lockDrain): concurrent `rhi drain`s each read
// the file as the last one wrote it, so none loses another's change.
func updateDrain(ctx context.Context, path string, change func(drain.Set) drain.Set) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	unlock, err := lockDrain(ctx, path)
	if err != nil {
		return err
	}
	defer unlock()
	set, err := drain.Read(path)
	if err != nil {
		return err
	}
	return drain.Write(path, change(set))
}

// lockRetry is how often a waiting `rhi drain` tries the lock again.
const lockRetry = 10 * time.Millisecond

// lockDrain takes an exclusive flock on drainFile + ".lock", which it
// creates if missing (see openLock: mode 0600, a regular file of root, of
// this user or of the directory's owner); the wait for the lock ends with
// ctx. Only `rhi drain` and `rhi undrain` take it: the
// daemon reads the drain file, which is replaced whole, never written in
// place.
func lockDrain(ctx context.Context, drainFile string) (unlock func(), err error) {
	path := drainFile + ".lock"
	f, err := openLock(path)
	if err != nil {
		return nil, fmt.Errorf("drain %w", err)
	}
	retry := waitClock.pacer(lockRetry)
	defer retry.stop()
	for {
		err := tryLock(f)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, errLockHeld) {
			f.Close()
			return nil, fmt.Errorf("drain lock %q: %w", path, err)
		}
		if err := retry.wait(ctx); err != nil {
			f.Close()
			return nil, fmt.Errorf("drain lock %q: still held by another rhi drain: %w", path, err)
		}
	}
}

// statusEvery is how often waitDrain asks the daemon for its status, and
// statusTimeout bounds each question.
const (
	statusEvery   = 200 * time.Millisecond
	statusTimeout = 2 * time.Second
)

// waitDrain polls the daemon's status until every target shows the drain
// state on and, for a drain, is off the interface with BIRD confirming it
// is exported nowhere; it gives up when ctx ends. A drain with a grace has
// a first step, which it watches for on the way: the VIP in last resort
// with BIRD confirming it exports it so (GRACEFUL_SHUTDOWN); a VIP seen in
// its grace whose first step BIRD never confirmed fails the drain.
func waitDrain(ctx context.Context, socket string, on bool, targets []netip.Prefix, since time.Time, stdout, stderr io.Writer) int {
	want := map[string]bool{}
	for _, p := range targets {
		want[p.String()] = true
	}
	steps := graceSteps{}
	var last status.Status
	var lastErr error
	tick := waitClock.pacer(statusEvery)
	defer tick.stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, statusTimeout)
		_, st, err := fetchStatus(rctx, socket)
		cancel()
		lastErr = err
		if err == nil {
			last = st
			if on {
				steps.note(st, want, since)
			}
			if pending := drainPending(st, want, on, since); len(pending) == 0 {
				reportDrain(stdout, st, want, since)
				if on {
					return steps.report(stdout, stderr, st, want)
				}
				return exitOK
			}
		}
		if tick.wait(ctx) != nil {
			if lastErr != nil {
				fmt.Fprintf(stderr, "rhi: recorded, but NOT confirmed as applied: daemon not reachable on %s: %v\n", socket, lastErr)
				return exitFailure
			}
			reportDrain(stdout, last, want, since)
			fmt.Fprintf(stderr, "rhi: not confirmed before the timeout: %s\n", strings.Join(drainPending(last, want, on, since), "; "))
			return exitFailure
		}
	}
}

// graceStep is what `rhi drain` saw of one VIP's first step.
type graceStep struct {
	seen      bool      // the VIP was seen in its grace (drain_phase draining)
	deadline  time.Time // when the daemon said the grace ends
	confirmed bool      // BIRD was seen exporting it as last resort
}

// graceSteps are the first steps of a drain, per VIP address.
type graceSteps map[string]*graceStep

// note records what st shows of each target's first step.
func (g graceSteps) note(st status.Status, want map[string]bool, since time.Time) {
	for _, v := range st.VIPs {
		if !want[v.Address] || v.DrainPhase != "draining" {
			continue
		}
		s := g[v.Address]
		if s == nil {
			s = &graceStep{}
			g[v.Address] = s
		}
		s.seen, s.deadline = true, v.DrainDeadline
		if b := v.Bird; b != nil && b.LastResort && b.Agrees && !b.Stale &&
			b.Expected == router.Present && !b.CheckedAt.Before(since) {
			s.confirmed = true
		}
	}
}

// report writes each target's first step and returns the exit code: a
// failure if a VIP went through a grace that BIRD was never seen to
// confirm (the routers may not have been told to move before the
// withdrawal), when BIRD confirmation is on.
func (g graceSteps) report(stdout, stderr io.Writer, st status.Status, want map[string]bool) int {
	code := exitOK
	for _, v := range st.VIPs {
		if !want[v.Address] {
			continue
		}
		s := g[v.Address]
		switch {
		case s == nil:
			fmt.Fprintf(stdout, "%-20s withdrawn without a grace (drain_grace 0s, not announced, health failing, or no last-resort interface)\n", v.Address)
		case !st.Bird.Enabled:
			fmt.Fprintf(stdout, "%-20s was in last resort until %s (BIRD confirmation off)\n", v.Address, s.deadline.Format(time.RFC3339))
		case !s.confirmed:
			fmt.Fprintf(stderr, "rhi: %s: withdrawn, but BIRD was never seen exporting it as last resort (GRACEFUL_SHUTDOWN) during its grace\n", v.Address)
			code = exitFailure
		default:
			fmt.Fprintf(stdout, "%-20s was in last resort until %s, BIRD confirmed (GRACEFUL_SHUTDOWN), then withdrawn\n", v.Address, s.deadline.Format(time.RFC3339))
		}
	}
	return code
}

// drainPending lists what is still to happen, one entry per VIP.
func drainPending(st status.Status, want map[string]bool, on bool, since time.Time) []string {
	var out []string
	known := map[string]bool{}
	for _, v := range st.VIPs {
		if !want[v.Address] {
			continue
		}
		known[v.Address] = true
		expected := router.Absent
		if v.Desired {
			expected = router.Present
		}
		switch {
		case v.Drained != on:
			out = append(out, v.Address+": the daemon has not read the drain file yet")
		case on && v.DrainPhase == "draining":
			out = append(out, v.Address+": in last resort until "+v.DrainDeadline.Format(time.RFC3339)+" (drain_grace)")
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

func reportDrain(w io.Writer, st status.Status, want map[string]bool, since time.Time) {
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
