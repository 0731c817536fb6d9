package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/rhi-daemon/rhi/integration/site"
)

// report gathers every scenario's figures for the final table.
type report struct {
	machine string
	seed    uint64
	flips   []flipResult
	idles   []idleResult
	scales  []scaleResult
	costs   []costResult
	steps   []stepsResult
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nrhi lab benchmark: %s (seed %d)\n", r.machine, r.seed)
	if len(r.flips) > 0 {
		fmt.Fprintln(w, "\nReaction, median / worst in ms. \"wait\" is from the API change to the start of the poll")
		fmt.Fprintln(w, "that saw it; \"rhi0\" and \"peer\" count from that start (the wait subtracted); \"total\" is")
		fmt.Fprintln(w, "API change -> peer. Changes fall at random in the middle 80 % of an interval.")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "VIPs\tpoll\tchange\tn\twait\trhi0 after poll\tpeer after poll\ttotal\tdiscarded")
		for _, f := range r.flips {
			for _, d := range []struct {
				name    string
				samples []sample
			}{{"withdraw", f.withdraw}, {"announce", f.announce}} {
				var wait, iface, peer, total []time.Duration
				for _, s := range d.samples {
					wait, iface, peer, total = append(wait, s.wait), append(iface, s.iface), append(peer, s.peer), append(total, s.total)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\n", f.n, f.poll, d.name, len(d.samples),
					site.Summarize(wait), site.Summarize(iface), site.Summarize(peer), site.Summarize(total), f.discarded)
			}
		}
		tw.Flush()
	}
	if len(r.idles) > 0 || len(r.scales) > 0 {
		fmt.Fprintln(w, "\nrhi at rest (health unchanged, VIPs announced); CPU over the window, RSS at its end.")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "VIPs\tupstreams\tpoll\twindow\tCPU (% of a core)\tRSS\tthreads")
		for _, i := range r.idles {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%d\n", i.vips, i.upstreams, i.poll, i.window.Round(time.Second), pct(i.cpu), site.MiB(i.rss), i.threads)
		}
		for _, s := range r.scales {
			fmt.Fprintf(tw, "%d\t%d (%s)\t%s\t%s\t%s\t%s\t-\n", s.upstreams, s.upstreams, s.mode, s.poll, s.window.Round(time.Second), pct(s.rhiShare), site.MiB(s.rss))
		}
		tw.Flush()
	}
	r.printCosts(w)
	r.printSteps(w)
	if len(r.scales) > 0 {
		fmt.Fprintln(w, "\nPolls of distinct upstreams (one VIP each), means over the window. CPU per poll is rhi's")
		fmt.Fprintln(w, "whole tick (poll, decide, read rhi0); the fake API's is its serving of the requests.")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "upstreams\tmode\tpoll\ttimeout\tpolls (expected)\tfailed\tunreadable\twall/poll\trequests/poll\trhi CPU/poll\tfake API CPU/poll")
		for _, s := range r.scales {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d (%d)\t%d\t%d\t%s ms\t%s\t%s ms\t%s ms\n", s.upstreams, s.mode, s.poll, s.timeout,
				s.polls, int(s.window/s.poll), s.failed, s.unreadable, ms(s.wall), strconv.FormatFloat(s.requests, 'f', 0, 64), ms(s.rhiCPU), ms(s.apiCPU))
		}
		tw.Flush()
	}
}

// printCosts is the table of the cost scenarios, and per number of
// upstreams whether the data-path goal holds at the defaults.
func (r *report) printCosts(w io.Writer) {
	if len(r.costs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nPolling cost: the fake with APISIX 3.18's cost model (2 workers), 500 data-path requests/s")
	fmt.Fprintln(w, "through one route; rhi --dry-run with one VIP per upstream. \"rhi share\" is rhi's control-API")
	fmt.Fprintln(w, "time over the window, in % of one worker. Data-path latencies in ms: \"loop\" in the fake's")
	fmt.Fprintln(w, "serving loops' time (wait for the worker + cost), \"wall\" as the client timed them.")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "upstreams\trhi\teffective interval\twindow\trhi share\trequests\tloop p50\tloop p99\tloop max\twall p50\twall p99\twall max\terrors")
	for _, c := range r.costs {
		eff := "-"
		if c.effective > 0 {
			eff = c.effective.Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", c.upstreams, c.setting, eff, c.window.Round(time.Second), pct(c.share),
			c.loop.Count, ms3(c.loop.P50), ms3(c.loop.P99), ms3(c.loop.Max),
			ms(c.load.Quantile(0.5).Seconds()), ms(c.load.Quantile(0.99).Seconds()), ms(c.load.Quantile(1).Seconds()), c.load.Errors)
	}
	tw.Flush()
	fmt.Fprintln(w, "Goal at the defaults: loop p99 with rhi <= max(1.1 x without, without + 1 ms).")
	for _, g := range costGoals(r.costs) {
		fmt.Fprintln(w, g)
	}
}

// costGoals says, for each number of upstreams with both a "no rhi" and a
// "defaults" window, whether the loop-time p99 with rhi meets costGoal.
func costGoals(costs []costResult) []string {
	var out []string
	for _, without := range costs {
		if without.setting != "no rhi" {
			continue
		}
		for _, with := range costs {
			if with.upstreams != without.upstreams || with.setting != "defaults" {
				continue
			}
			limit := costGoal(without.loop.P99)
			verdict := "holds"
			if with.loop.P99 > limit {
				verdict = "FAILS"
			}
			out = append(out, fmt.Sprintf("  %d upstreams: %s (loop p99 %s ms with rhi, %s ms without, limit %s ms)",
				without.upstreams, verdict, ms3(with.loop.P99), ms3(without.loop.P99), ms3(limit)))
		}
	}
	return out
}

// printSteps is the table of the steps scenarios.
func (r *report) printSteps(w io.Writer) {
	if len(r.steps) == 0 {
		return
	}
	fmt.Fprintln(w, "\nWithdraws behind the fake's checker (APISIX 3.18's defaults: a check a second, a dying node")
	fmt.Fprintln(w, "mostly_healthy for one check), backends killed at a random point of the poll interval, fast_poll_interval 100ms.")
	fmt.Fprintln(w, "rhi's share: the last node unhealthy in the fake -> the route gone at the peer, median / worst.")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "poll\ttrials\trhi's share\tmostly_healthy window read")
	for _, st := range r.steps {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d of %d\n", st.poll, len(st.shares), site.Summarize(st.shares), st.caught, len(st.shares))
	}
	tw.Flush()
}

func pct(share float64) string { return strconv.FormatFloat(share*100, 'f', 2, 64) + " %" }

func ms(seconds float64) string { return strconv.FormatFloat(seconds*1000, 'f', 1, 64) }

// ms3 is d in ms to the µs.
func ms3(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 3, 64) }
