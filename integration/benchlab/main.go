// Command benchlab measures rhi in the netns lab against its targets
// and prints a table (make bench-lab; root; a few minutes):
//
//   - reaction: over repeated trials, the time from the fake control API
//     changing to the VIPs leaving (or returning to) rhi0 and to the peer
//     router losing (or regaining) the routes, for 1 VIP and for 1,000 VIPs
//     flipping at once, at poll intervals of 1 s and 200 ms. The wait for
//     rhi's next poll is measured and subtracted: each change is placed at a
//     random point between two polls, and the poll that sees it is known
//     from rhi's poll grid (status last_poll, poll_interval);
//   - idle: rhi's RSS and CPU over a quiet window with 1,000 VIPs;
//   - scale: polls of 1,000 and 10,000 distinct upstreams (wall, rhi's and
//     the fake API's CPU, requests per poll);
//   - cost: for 100 to 10,000 upstreams in the fake with APISIX's cost
//     model, rhi's share of the fake's serving loops and the data-path
//     latency with and without rhi, at the defaults and at a 1 s interval,
//     in the fake's loop time and as the client timed it, and whether the
//     data-path goal holds at the defaults.
//
// Every scenario runs in a fresh one-ADC lab. The figures are recorded by
// hand in BENCHMARKS.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
)

// labPrefix names the benchmark's namespaces, apart from the tests' and the
// demo's.
const labPrefix = "rhi-bench-"

type options struct {
	trials1    int
	trials1000 int
	idle       time.Duration
	window     time.Duration
	costWindow time.Duration
	only       string
	seed       uint64
}

func main() { os.Exit(run()) }

func run() int {
	var o options
	flag.IntVar(&o.trials1, "trials1", 20, "trials (withdraw + announce) with 1 VIP")
	flag.IntVar(&o.trials1000, "trials1000", 10, "trials (withdraw + announce) with 1,000 VIPs")
	flag.DurationVar(&o.idle, "idle", 30*time.Second, "idle window for rhi's CPU and RSS")
	flag.DurationVar(&o.window, "window", 20*time.Second, "measuring window of the upstream-scale polls")
	flag.DurationVar(&o.costWindow, "cost-window", 20*time.Second, "least data-path load window of the polling-cost scenarios")
	flag.StringVar(&o.only, "only", "", "comma-separated scenarios to run (default all): "+strings.Join(names(), ", "))
	flag.Uint64Var(&o.seed, "seed", 0, "random seed of the change times (0: from the clock)")
	flag.Parse()
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	selected, err := pick(o.only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchlab:", err)
		return 2
	}
	if err := lab.Available(); err != nil {
		fmt.Fprintln(os.Stderr, "benchlab: the lab cannot run here:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	lab.Sweep(ctx, labPrefix)

	bins, err := site.Build(ctx, "rhi-benchlab-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchlab:", err)
		return 1
	}
	defer bins.Remove()

	r := &report{machine: site.Machine(), seed: o.seed}
	rng := rand.New(rand.NewPCG(o.seed, 0x7268692d62656e63))
	var failed error
	for _, sc := range selected {
		fmt.Fprintf(os.Stderr, "== %s\n", sc.name)
		if err := sc.run(ctx, bins, o, rng, r); err != nil {
			failed = fmt.Errorf("%s: %w", sc.name, err)
			break
		}
	}
	r.print(os.Stdout)
	if failed != nil {
		fmt.Fprintln(os.Stderr, "benchlab:", failed)
		return 1
	}
	return 0
}

// scenario is one measurement in its own lab.
type scenario struct {
	name string
	run  func(ctx context.Context, bins site.Binaries, o options, rng *rand.Rand, r *report) error
}

func scenarios() []scenario {
	flip := func(n int, poll time.Duration, idle bool) func(context.Context, site.Binaries, options, *rand.Rand, *report) error {
		return func(ctx context.Context, bins site.Binaries, o options, rng *rand.Rand, r *report) error {
			trials := o.trials1
			if n > 1 {
				trials = o.trials1000
			}
			return runFlips(ctx, bins, flipPlan{n: n, poll: poll, trials: trials, idle: idle, idleFor: o.idle}, rng, r)
		}
	}
	scale := func(n int, mode string) func(context.Context, site.Binaries, options, *rand.Rand, *report) error {
		return func(ctx context.Context, bins site.Binaries, o options, _ *rand.Rand, r *report) error {
			return runScale(ctx, bins, n, mode, o.window, r)
		}
	}
	cost := func(n int) func(context.Context, site.Binaries, options, *rand.Rand, *report) error {
		return func(ctx context.Context, bins site.Binaries, o options, _ *rand.Rand, r *report) error {
			return runCost(ctx, bins, n, o.costWindow, r)
		}
	}
	steps := func(poll time.Duration) func(context.Context, site.Binaries, options, *rand.Rand, *report) error {
		return func(ctx context.Context, bins site.Binaries, o options, rng *rand.Rand, r *report) error {
			return runSteps(ctx, bins, poll, o.trials1, rng, r)
		}
	}
	return []scenario{
		{"flip1-1s", flip(1, time.Second, false)},
		{"flip1-200ms", flip(1, 200*time.Millisecond, false)},
		{"flip1000-1s", flip(1000, time.Second, true)},
		{"flip1000-200ms", flip(1000, 200*time.Millisecond, true)},
		{"poll1000", scale(1000, "per_upstream")},
		{"poll10000", scale(10000, "per_upstream")},
		{"poll10000-list", scale(10000, "list")},
		{"poll1000-auto", scale(1000, "auto")},
		{"poll10000-auto", scale(10000, "auto")},
		{"cost100", cost(100)},
		{"cost1000", cost(1000)},
		{"cost3000", cost(3000)},
		{"cost10000", cost(10000)},
		{"steps-1s", steps(time.Second)},
		{"steps-3s", steps(3 * time.Second)},
	}
}

func names() []string {
	var out []string
	for _, s := range scenarios() {
		out = append(out, s.name)
	}
	return out
}

// pick returns the scenarios named in only (all when empty), in their
// standard order.
func pick(only string) ([]scenario, error) {
	all := scenarios()
	if only == "" {
		return all, nil
	}
	want := strings.Split(only, ",")
	for _, w := range want {
		if !slices.Contains(names(), w) {
			return nil, fmt.Errorf("-only: unknown scenario %q (known: %s)", w, strings.Join(names(), ", "))
		}
	}
	var out []scenario
	for _, s := range all {
		if slices.Contains(want, s.name) {
			out = append(out, s)
		}
	}
	return out, nil
}

// newLab builds a one-ADC lab for a scenario.
func newLab(ctx context.Context) (*lab.Lab, error) {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	return lab.New(ctx, lab.Options{DCs: 1, Prefix: labPrefix, Wait: 60 * time.Second})
}

// closeLab closes l and joins its error to err.
func closeLab(l *lab.Lab, err *error) {
	if cerr := l.Close(); cerr != nil {
		*err = errors.Join(*err, cerr)
	}
}
