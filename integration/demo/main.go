// Command demo tells the design note's story in the netns lab, for people
// who have never seen BGP: two data centres announce the same service
// addresses (anycast) to a router; every backend in one of them dies; rhi
// withdraws the addresses there and the router sends everyone to the other;
// the backends come back and so does the route. Run it as root: make demo.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
)

func main() {
	poll := flag.Duration("poll", time.Second, "rhi's apisix_poll_interval in the demo")
	flag.Parse()
	if err := run(*poll); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) { fmt.Printf(format+"\n", args...) }

func caption(s string) {
	say("\n\033[1m== %s\033[0m", s)
}

func run(poll time.Duration) error {
	if err := lab.Available(); err != nil {
		return fmt.Errorf("the lab cannot run here: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	lab.Sweep(ctx, lab.DefaultPrefix)

	caption("Building rhi and a stand-in for APISIX's control API")
	bins, err := site.Build(ctx, "rhi-demo-bin-")
	if err != nil {
		return err
	}
	defer bins.Remove()

	caption("Building the lab: two data centres (dc1, dc2) and one router, each in its own network namespace")
	l, err := lab.New(ctx, lab.Options{DCs: 2})
	if err != nil {
		return err
	}
	defer func() {
		caption("Cleaning up")
		if err := l.Close(); err != nil {
			say("cleanup: %v", err)
		}
	}()
	say("Each data centre runs BIRD (a BGP speaker), a fake APISIX and rhi. The router runs BIRD too.")
	say("Both data centres announce the same three service addresses (VIPs) to the router: that is anycast.")
	say("The router prefers dc1 when both announce a VIP; if dc1 stops announcing, it uses dc2.")

	cfg := site.Config{VIPs: site.Seed, PollInterval: poll}
	var sites []*site.Site
	for _, dc := range l.DCs {
		s, err := site.New(ctx, dc, bins, cfg)
		if err != nil {
			return err
		}
		if err := s.StartRHI(ctx); err != nil {
			return err
		}
		sites = append(sites, s)
	}
	defer func() {
		for _, s := range sites {
			s.StopRHI()
		}
	}()
	vips := make([]netip.Prefix, len(site.Seed))
	for i, v := range site.Seed {
		vips[i] = netip.MustParsePrefix(v.Address + "/32")
	}
	if err := failover(ctx, l, sites[0], vips, poll); err != nil {
		return err
	}
	say("\nrhi's own view in dc1 (`rhi status`):")
	out, err := sites[0].DC.Run(ctx, bins.RHI, "status", "--config", sites[0].Config)
	if err != nil {
		return err
	}
	fmt.Print(indent(out))
	return nil
}

// failover tells the demo's story: the VIPs served from dc1, every dc1
// backend failing and the router moving to dc2, then dc1 coming back.
func failover(ctx context.Context, l *lab.Lab, dc1 *site.Site, vips []netip.Prefix, poll time.Duration) error {
	if _, err := waitAll(ctx, l, vips, "dc1", 2); err != nil {
		return err
	}
	caption("The router's table: where traffic for each VIP goes")
	if err := table(ctx, l, vips); err != nil {
		return err
	}

	caption("Every backend in dc1 dies (APISIX's health checks now mark all of dc1's nodes unhealthy)")
	changed := time.Now()
	if err := dc1.SetAll("unhealthy", site.Keys(site.Seed)...); err != nil {
		return err
	}
	seen, err := waitAll(ctx, l, vips, "dc2", 1)
	if err != nil {
		return err
	}
	say("rhi in dc1 polls APISIX every %s, sees no healthy node, and removes the VIPs from its rhi0 interface;", poll)
	say("BIRD notices and withdraws the routes over BGP.")
	if err := timings(ctx, dc1, vips, changed, seen, "withdrawn"); err != nil {
		return err
	}
	caption("The router's table now: everything goes to dc2, users never reach the dead backends")
	if err := table(ctx, l, vips); err != nil {
		return err
	}

	caption("dc1's backends come back")
	changed = time.Now()
	if err := dc1.SetAll("healthy", site.Keys(site.Seed)...); err != nil {
		return err
	}
	seen, err = waitAll(ctx, l, vips, "dc1", 2)
	if err != nil {
		return err
	}
	if err := timings(ctx, dc1, vips, changed, seen, "announced again"); err != nil {
		return err
	}
	caption("The router's table: dc1 is back")
	if err := table(ctx, l, vips); err != nil {
		return err
	}
	return nil
}

// waitAll waits until the router's best path for every VIP is via best with
// paths from n sites, and returns when each VIP got there.
func waitAll(ctx context.Context, l *lab.Lab, vips []netip.Prefix, best string, n int) (map[netip.Prefix]time.Time, error) {
	seen := map[netip.Prefix]time.Time{}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := lab.Eventually(ctx, 0, 0, func(ctx context.Context) error {
		for _, p := range vips {
			if _, ok := seen[p]; ok {
				continue
			}
			v, err := site.Peer(ctx, l, p)
			if err != nil {
				return err
			}
			if v.Best == best && len(v.From) == n {
				seen[p] = time.Now()
			}
		}
		if len(seen) < len(vips) {
			return fmt.Errorf("%d of %d VIPs via %s with %d paths", len(seen), len(vips), best, n)
		}
		return nil
	})
	return seen, err
}

func table(ctx context.Context, l *lab.Lab, vips []netip.Prefix) error {
	say("  %-16s %-18s %s", "VIP", "traffic goes to", "also announced by")
	for _, p := range vips {
		v, err := site.Peer(ctx, l, p)
		if err != nil {
			return err
		}
		var others []string
		for _, f := range v.From {
			if f != v.Best {
				others = append(others, f)
			}
		}
		best := v.Best
		if best == "" {
			best = "(nowhere)"
		}
		also := strings.Join(others, ", ")
		if also == "" {
			also = "-"
		}
		say("  %-16s %-18s %s", p, best, also)
	}
	return nil
}

// timings prints, per VIP, how long after the API changed the router saw
// it, and how much of that came after rhi's decision (the rest is waiting
// for rhi's next poll).
func timings(ctx context.Context, s *site.Site, vips []netip.Prefix, changed time.Time, seen map[netip.Prefix]time.Time, what string) error {
	st, err := s.Status(ctx)
	if err != nil {
		return err
	}
	decided := map[string]time.Time{}
	for _, v := range st.VIPs {
		decided[v.Address] = v.Since
	}
	say("  %-16s %-34s %s", "VIP", what+" at the router", "of which after rhi decided")
	for _, p := range vips {
		total := seen[p].Sub(changed)
		after := seen[p].Sub(decided[p.String()])
		say("  %-16s %-34s %s", p, fmt.Sprintf("%s after the change", total.Round(time.Millisecond)), after.Round(time.Millisecond))
	}
	say("  (the rest is waiting for rhi's next poll of APISIX)")
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}
