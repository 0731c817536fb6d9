//go:build integration

package tiers

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
	"github.com/rhi-daemon/rhi/integration/lab"
)

// sample is one look at the router's paths for vip4.
type sample struct {
	at    time.Time
	paths []bird.Path
}

// best returns the protocol of the router's best path, or "".
func (s sample) best() string {
	for _, p := range s.paths {
		if p.Primary {
			return p.Proto
		}
	}
	return ""
}

// from returns the path learnt over protocol proto.
func (s sample) from(proto string) (bird.Path, bool) {
	for _, p := range s.paths {
		if p.Proto == proto {
			return p, true
		}
	}
	return bird.Path{}, false
}

// watcher asks the router for vip4's paths every 2 ms over a connection of
// its own and counts every look at which a path it must always see is
// missing.
type watcher struct {
	mu      sync.Mutex
	last    sample
	looks   int
	missing map[string]int // protocol -> looks without its path
	err     error
}

func watch(ctx context.Context, c *bird.Conn, always ...string) (*watcher, <-chan struct{}) {
	w := &watcher{missing: map[string]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			ps, err := routerPaths(ctx, c)
			s := sample{at: time.Now(), paths: ps}
			w.mu.Lock()
			if err != nil {
				if ctx.Err() == nil && w.err == nil {
					w.err = err
				}
				w.mu.Unlock()
				return
			}
			w.last, w.looks = s, w.looks+1
			for _, proto := range always {
				if _, ok := s.from(proto); !ok {
					w.missing[proto]++
				}
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w, done
}

// until waits for the first look taken after since that satisfies ok, and
// returns its time.
func (w *watcher) until(ctx context.Context, since time.Time, ok func(sample) bool) (time.Time, error) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		w.mu.Lock()
		s, err := w.last, w.err
		w.mu.Unlock()
		if err != nil {
			return time.Time{}, err
		}
		if s.at.After(since) && ok(s) {
			return s.at, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%w; last look: best %q, %d paths", ctx.Err(), s.best(), len(s.paths))
		case <-tick.C:
		}
	}
}

// degradedAt reports whether the router has dc's path with the degraded
// attributes (asn prepended RHI_DEGRADED_PREPEND times on top of the eBGP
// copy, the large community (asn, 1, 1)), or without them when want is false.
func degradedAt(s sample, proto string, asn uint32, want bool) bool {
	p, ok := s.from(proto)
	if !ok {
		return false
	}
	lc := slices.Contains(p.LargeCommunities, bird.LargeCommunity{asn, birdconf.DegradedCommunityData1, birdconf.DegradedCommunityData2})
	if want {
		return p.LeadingCopies(asn) == 1+prepend && len(p.ASPath) == 1+prepend && lc
	}
	return p.LeadingCopies(asn) == 1 && len(p.ASPath) == 1 && !lc
}

// trials is the number of round trips TestDegradedMove makes:
// $RHI_TIERS_TRIALS, default 20.
func trials(t *testing.T) int {
	n := 20
	if v := os.Getenv("RHI_TIERS_TRIALS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("RHI_TIERS_TRIALS=%q: want a positive number", v)
		}
	}
	return n
}

// TestDegradedMove: dc1 and dc2 announce a VIP from rhi0; moving dc1's copy
// to rhi1 (add before delete) makes the router prefer dc2 while keeping
// dc1's path, now with the prepended AS path and the community; moving it
// back makes dc1 best again. The router holds both paths at every look
// throughout. It logs the time from the add to the router preferring the
// other site, median and worst over the trials (BENCHMARKS.md).
func TestDegradedMove(t *testing.T) {
	l := tierLab(t, 2, lab.Options{})
	dc1, dc2 := l.DCs[0], l.DCs[1]
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	ip(t, ctx, dc2, "addr", "add", vip4.String(), "dev", "rhi0")
	ip(t, ctx, dc1, "addr", "add", vip4.String(), "dev", "rhi0")
	waitRouterPaths(t, l, 2)

	wctx, stop := context.WithCancel(ctx)
	w, done := watch(wctx, dial(t, l.Peer), dc1.PeerProtos[0], dc2.PeerProtos[0])
	defer func() { stop(); <-done }()
	if _, err := w.until(ctx, time.Now(), func(s sample) bool { return s.best() == dc1.PeerProtos[0] }); err != nil {
		t.Fatalf("router: dc1 is not best before the moves: %v", err)
	}

	var down, up []time.Duration
	for i := 0; i < trials(t); i++ {
		d, err := move(ctx, w, dc1, birdconf.DegradedInterface, "rhi0", dc2.PeerProtos[0], true)
		if err != nil {
			t.Fatalf("trial %d, to rhi1: %v", i+1, err)
		}
		down = append(down, d)
		d, err = move(ctx, w, dc1, "rhi0", birdconf.DegradedInterface, dc1.PeerProtos[0], false)
		if err != nil {
			t.Fatalf("trial %d, back to rhi0: %v", i+1, err)
		}
		up = append(up, d)
	}
	stop()
	<-done
	w.check(t, 2*len(down))
	t.Logf("BENCH degraded move, %d trials: to rhi1 -> router prefers dc2: median %v, worst %v; back to rhi0 -> dc1 best: median %v, worst %v",
		len(down), median(down), slices.Max(down), median(up), slices.Max(up))
}

// move puts vip4 on dc's iface `to` and then deletes it from `from`, and
// waits for the router to prefer bestAfter with dc's path (degraded or not)
// in its table. It returns the time from the add to the router's best path
// being bestAfter.
func move(ctx context.Context, w *watcher, dc *lab.DC, to, from, bestAfter string, degraded bool) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := dc.Run(ctx, "ip", "addr", "add", vip4.String(), "dev", to); err != nil {
		return 0, err
	}
	if _, err := dc.Run(ctx, "ip", "addr", "del", vip4.String(), "dev", from); err != nil {
		return 0, err
	}
	at, err := w.until(ctx, start, func(s sample) bool { return s.best() == bestAfter })
	if err != nil {
		return 0, fmt.Errorf("router never preferred %s: %w", bestAfter, err)
	}
	proto := dc.PeerProtos[0]
	if _, err := w.until(ctx, start, func(s sample) bool { return degradedAt(s, proto, dc.ASN, degraded) }); err != nil {
		return 0, fmt.Errorf("router: %s's path with degraded=%v: %w", proto, degraded, err)
	}
	return at.Sub(start), nil
}

// median returns the middle of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// check fails t if the watch of the router saw an error, or a look
// without one of the sites' paths, or too few looks for moves moves to
// prove anything.
func (w *watcher) check(t *testing.T, moves int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatalf("watching the router: %v", w.err)
	}
	for proto, n := range w.missing {
		if n > 0 {
			t.Errorf("router: %d of %d looks without %s's path", n, w.looks, proto)
		}
	}
	if w.looks < moves {
		t.Errorf("router looked at only %d times over %d moves: the watch proves nothing", w.looks, moves)
	}
	t.Logf("router looked at %d times", w.looks)
}
