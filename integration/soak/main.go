// Command soak runs rhi in the netns lab with many VIPs whose upstreams flap
// at random for a long time (make soak; root; not in CI), then checks that
// nothing was lost: with the flapping stopped and two polls later, every
// VIP's state at rhi (desired, on rhi0) and at the peer router must be what
// the last health of its upstreams says. It prints rhi's RSS, threads,
// goroutines and file descriptors before and after, and exits non-zero if
// any VIP ends in the wrong state or rhi dies.
//
//	go run ./integration/soak -duration 10m
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/status"
)

// labPrefix names the soak's namespaces, apart from the tests' and the
// benchmark's.
const labPrefix = "rhi-soak-"

// statuses are what a flapping upstream's nodes take, at random; the first
// two count as healthy.
var statuses = []string{"healthy", "mostly_healthy", "unhealthy", "mostly_unhealthy"}

func healthy(status string) bool { return status == "healthy" || status == "mostly_healthy" }

type options struct {
	duration  time.Duration
	poll      time.Duration
	vips      int
	upstreams int
	flap      float64
	seed      uint64
}

func main() { os.Exit(run()) }

func run() int {
	var o options
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "how long the upstreams flap")
	flag.DurationVar(&o.poll, "poll", time.Second, "rhi's apisix_poll_interval, and how often the upstreams may flap")
	flag.IntVar(&o.vips, "vips", 1000, "VIPs")
	flag.IntVar(&o.upstreams, "upstreams", 100, "distinct upstreams; each VIP depends on 1 to 3 of them")
	flag.Float64Var(&o.flap, "flap", 0.2, "chance that an upstream takes a new random status at each poll")
	flag.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	flag.Parse()
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	if o.vips < 1 || o.vips > 60000 || o.upstreams < 3 || o.flap < 0 || o.flap > 1 || o.poll <= 0 {
		fmt.Fprintln(os.Stderr, "soak: want 1-60000 VIPs, at least 3 upstreams, -flap in [0, 1] and a positive -poll")
		return 2
	}
	if err := lab.Available(); err != nil {
		fmt.Fprintln(os.Stderr, "soak: the lab cannot run here:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	lab.Sweep(ctx, labPrefix)
	ok, err := soak(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}

// world is the soak's lab and what the soak told the fake API.
type world struct {
	lab    *lab.Lab
	site   *site.Site
	rhi    *lab.Proc
	vips   []site.VIP
	health map[string]string // upstream key → the status of all its nodes
}

func soak(ctx context.Context, o options) (ok bool, err error) {
	rng := rand.New(rand.NewPCG(o.seed, 0x736f616b))
	bins, err := site.Build(ctx, "rhi-soak-bin-")
	if err != nil {
		return false, err
	}
	defer bins.Remove()
	lctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	l, err := lab.New(lctx, lab.Options{DCs: 1, Prefix: labPrefix, Wait: 60 * time.Second})
	cancel()
	if err != nil {
		return false, err
	}
	defer func() {
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()

	w := &world{lab: l, vips: plan(rng, o.vips, o.upstreams), health: map[string]string{}}
	for _, k := range site.Keys(w.vips) {
		w.health[k] = "healthy" // as NewSite creates them
	}
	cfg := site.Config{PollInterval: o.poll, VIPs: w.vips}
	if w.site, err = site.New(ctx, l.DCs[0], bins, cfg); err != nil {
		return false, err
	}
	// ctx bounds rhi's life, not only its start.
	w.site.StartWait = 2 * time.Minute
	if err := w.site.StartRHI(ctx); err != nil {
		return false, err
	}
	w.rhi = w.site.RHI()
	defer w.site.StopRHI()
	say("soak: %d VIPs over %d upstreams, poll %s, flap chance %.2f per upstream per poll, %s, seed %d",
		o.vips, len(w.health), o.poll, o.flap, o.duration, o.seed)
	if bad, err := w.converge(ctx, o.poll, time.Minute); err != nil || len(bad) > 0 {
		return false, fmt.Errorf("the lab never settled before the soak: %v %v", err, bad)
	}
	before, err := w.sample(ctx)
	if err != nil {
		return false, err
	}
	st0, err := w.site.Status(ctx)
	if err != nil {
		return false, err
	}

	changes, err := w.flap(ctx, rng, o)
	if err != nil {
		return false, err
	}
	stopped := time.Now()
	say("flapping stopped after %d status changes; waiting for two polls", changes)

	bad, err := w.converge(ctx, o.poll, 10*time.Second)
	if err != nil {
		return false, err
	}
	after, err := w.sample(ctx)
	if err != nil {
		return false, err
	}
	st1, err := w.site.Status(ctx)
	if err != nil {
		return false, err
	}
	w.report(st0, st1, before, after, changes, stopped.Sub(before.proc.At))
	if len(bad) > 0 {
		say("FAIL: %d VIPs not in the state their last health says, two polls after the flapping stopped:", len(bad))
		for _, b := range bad[:min(len(bad), 20)] {
			say("  %s", b)
		}
		return false, nil
	}
	say("OK: all %d VIPs at rhi and at the peer router are what their last health says", len(w.vips))
	return true, nil
}

// report prints what the soak measured: the flapping's effect on rhi's
// counters between st0 and st1, and its process before and after.
func (w *world) report(st0, st1 status.Status, before, after sample, changes int, flapped time.Duration) {
	var flips uint64
	for i := range st1.VIPs {
		flips += st1.VIPs[i].Transitions - st0.VIPs[i].Transitions
	}
	logSize := int64(0)
	if fi, err := os.Stat(filepath.Join(w.site.DC.Dir, "rhi-main.log")); err == nil {
		logSize = fi.Size()
	}
	say("\nsoak report: %s", site.Machine())
	say("  %s of flapping, %d upstream status changes, %d VIP transitions applied by rhi", flapped.Round(time.Second), changes, flips)
	say("  polls %d, failed polls %d; main log %s", st1.ControlAPI.Polls-st0.ControlAPI.Polls, st1.ControlAPI.FailedPolls-st0.ControlAPI.FailedPolls, site.MiB(logSize))
	say("  %-10s %10s %10s %8s %8s %10s", "", "RSS", "peak RSS", "threads", "fds", "goroutines")
	for _, r := range []struct {
		name string
		s    sample
	}{{"before", before}, {"after", after}} {
		say("  %-10s %10s %10s %8d %8d %10.0f", r.name, site.MiB(r.s.proc.RSS), site.MiB(r.s.proc.HWM), r.s.proc.Threads, r.s.proc.FDs, r.s.goroutines)
	}
}

func say(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// plan gives each of n VIPs one to three distinct upstreams among m, with
// condition all or any at random.
func plan(rng *rand.Rand, n, m int) []site.VIP {
	vips := make([]site.VIP, n)
	for i := range vips {
		var ups []string
		for _, u := range rng.Perm(m)[:1+rng.IntN(3)] {
			ups = append(ups, fmt.Sprintf("/apisix/upstreams/flap%d", u))
		}
		cond := "all"
		if rng.IntN(2) == 0 {
			cond = "any"
		}
		vips[i] = site.VIP{Address: site.VIPAddr(i), Upstreams: ups, Condition: cond}
	}
	return vips
}

// want is whether v should be announced given the last health the soak set.
func (w *world) want(v site.VIP) bool {
	up := 0
	for _, k := range v.Upstreams {
		if healthy(w.health[k]) {
			up++
		}
	}
	if v.Condition == "any" {
		return up > 0
	}
	return up == len(v.Upstreams)
}

// flap changes upstreams at random once per poll interval until the
// duration is over, and reports how many status changes it made.
func (w *world) flap(ctx context.Context, rng *rand.Rand, o options) (int, error) {
	keys := site.Keys(w.vips)
	t := time.NewTicker(o.poll)
	defer t.Stop()
	report := time.NewTicker(30 * time.Second)
	defer report.Stop()
	start := time.Now()
	end := start.Add(o.duration)
	changes := 0
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return changes, ctx.Err()
		case <-w.rhi.Done():
			return changes, fmt.Errorf("rhi exited during the soak: %v (see %s)", w.rhi.Wait(ctx), w.rhi.Stderr)
		case <-report.C:
			s, err := w.sample(ctx)
			if err != nil {
				return changes, err
			}
			say("  %5s: %6d changes, RSS %s, threads %d, fds %d, goroutines %.0f",
				time.Since(start).Round(time.Second), changes, site.MiB(s.proc.RSS), s.proc.Threads, s.proc.FDs, s.goroutines)
		case <-t.C:
			for _, k := range keys {
				if rng.Float64() >= o.flap {
					continue
				}
				status := statuses[rng.IntN(len(statuses))]
				ref, err := apisix.ParseRef(k)
				if err != nil {
					return changes, err
				}
				if err := w.site.API.SetStatus(ref, status); err != nil {
					return changes, err
				}
				w.health[k] = status
				changes++
			}
		}
	}
	return changes, nil
}

// converge waits for two polls that started after now, then compares every
// VIP at rhi with what its health says, and the peer router's table with
// the VIPs that should be announced (waiting up to grace for BGP to carry
// the last changes). It returns the differences.
func (w *world) converge(ctx context.Context, poll, grace time.Duration) ([]string, error) {
	since := time.Now()
	var first uint64
	err := lab.Eventually(ctx, 10*poll+30*time.Second, poll/4, func(ctx context.Context) error {
		st, err := w.site.Status(ctx)
		if err != nil {
			return err
		}
		if st.ControlAPI.LastPoll.After(since) {
			if first == 0 {
				first = st.ControlAPI.Polls
			}
			if st.ControlAPI.Polls >= first+1 {
				return nil
			}
		}
		return fmt.Errorf("waiting for two polls after %s", since.Format(time.StampMilli))
	})
	if err != nil {
		return nil, err
	}
	st, err := w.site.Status(ctx)
	if err != nil {
		return nil, err
	}
	var bad []string
	wantPeer := map[netip.Prefix]bool{}
	for i, v := range w.vips {
		want := w.want(v)
		got := st.VIPs[i]
		prefix := netip.MustParsePrefix(v.Address + "/32")
		if got.Address != prefix.String() {
			return nil, fmt.Errorf("status lists %q where the config has %q", got.Address, v.Address)
		}
		if got.Desired != want || got.OnInterface != want {
			bad = append(bad, fmt.Sprintf("vip %q (%s of %s = %s): rhi desired %v, on rhi0 %v; want %v",
				v.Address, v.Condition, strings.Join(v.Upstreams, ","), w.healthOf(v), got.Desired, got.OnInterface, want))
		}
		if want {
			wantPeer[prefix] = true
		}
	}
	var peerBad []string
	err = lab.Eventually(ctx, grace, 100*time.Millisecond, func(ctx context.Context) error {
		routes, err := w.lab.Peer.TableRoutes(ctx, "master4")
		if err != nil {
			return err
		}
		got := map[netip.Prefix]bool{} // a network with several paths is listed once
		for _, r := range routes {
			got[r.Prefix] = true
		}
		peerBad = peerBad[:0]
		for p := range got {
			if !wantPeer[p] {
				peerBad = append(peerBad, fmt.Sprintf("peer router holds %s, which should be withdrawn", p))
			}
		}
		for p := range wantPeer {
			if !got[p] {
				peerBad = append(peerBad, fmt.Sprintf("peer router lacks %s, which should be announced", p))
			}
		}
		if len(peerBad) > 0 {
			return fmt.Errorf("%d differences at the peer router", len(peerBad))
		}
		return nil
	})
	if err != nil && len(peerBad) == 0 {
		return nil, err // could not read the peer at all
	}
	slices.Sort(peerBad)
	return append(bad, peerBad...), nil
}

func (w *world) healthOf(v site.VIP) string {
	var s []string
	for _, k := range v.Upstreams {
		s = append(s, w.health[k])
	}
	return strings.Join(s, ",")
}

// sample is rhi's resources at one moment.
type sample struct {
	proc       site.Proc
	goroutines float64
}

func (w *world) sample(ctx context.Context) (sample, error) {
	var s sample
	var err error
	if s.proc, err = site.ReadProc(w.rhi.Pid()); err != nil {
		return s, err
	}
	text, err := w.site.Metrics(ctx)
	if err != nil {
		return s, err
	}
	s.goroutines, err = site.Metric(text, "go_goroutines")
	return s, err
}
