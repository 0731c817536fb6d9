// Command fake-apisix serves a fake APISIX control API for the netns lab and
// the demo, steered through a unix socket (see package fakeapi).
//
//	fake-apisix --listen 127.0.0.1:9090 --control /run/lab/dc1-api.sock \
//	    --healthy upstreams/api,upstreams/auth
//
// By default node statuses change only when the control socket sets them
// and requests cost nothing. To behave as APISIX 3.18 does over time, with
// its cost, on two workers, with 3,000 upstreams and a data path:
//
//	fake-apisix --listen 127.0.0.1:9090 --data-listen 127.0.0.1:9080 \
//	    --control /run/lab/api.sock --workers 2 --checks --lazy --cost \
//	    --upstreams 3000
//
// Then POST /backends/upstreams/7?state=dead on the control socket kills
// upstream 7's servers, GET 127.0.0.1:9080/upstreams/7 goes through the data
// path (and, with --lazy, creates its checker), POST /restart?down=3s
// restarts, and GET /accounting tells how the workers' time was spent.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/rhi-daemon/rhi/integration/fakeapi"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/health"
)

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("fake-apisix", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9090", "address of the fake control API")
	dataListen := fs.String("data-listen", "", "address of the data path (APISIX's proxy listener); empty: none")
	control := fs.String("control", "", "unix socket to steer it (required)")
	healthy := fs.String("healthy", "", "comma-separated type/id resources to create with 2 healthy nodes")
	// APISIX answers chunked and closes a connection after 1000 answers
	// (nginx's keepalive_requests); the lab's defaults are off, so that its
	// figures compare with earlier ones.
	chunked := fs.Bool("chunked", false, "answer with chunked bodies, as APISIX does")
	keepalive := fs.Int("keepalive-requests", 0, "close a connection after this many answers, as nginx does (APISIX: 1000); 0: never")
	workers := fs.Int("workers", 1, "nginx workers: each has its own checkers and serving loop; a connection stays on one")
	perRequest := fs.Bool("per-request", false, "choose a worker for every request instead of every connection")
	standalone := fs.Bool("standalone", false, `name resources "/upstreams/1" as standalone (yaml) mode does, not "/apisix/upstreams/1"`)
	upstreams := fs.Int("upstreams", 0, "configure upstreams 1…N, each with --nodes nodes of their own addresses")
	nodes := fs.Int("nodes", 2, "nodes of each --upstreams upstream")

	checks := fs.Bool("checks", false, "run active health checks over time: statuses follow the servers that /backends kills and revives")
	d := apisixtest.DefaultChecks()
	lazy := fs.Bool("lazy", false, "create a worker's checker only when a data-path request reaches it (APISIX 3.14+)")
	interval := fs.Duration("interval", d.HealthyInterval, "active check interval, healthy and unhealthy nodes")
	successes := fs.Int("successes", d.Successes, "successful checks that make a node healthy")
	tcpFailures := fs.Int("tcp-failures", d.TCPFailures, "TCP failures that make a node unhealthy")
	httpFailures := fs.Int("http-failures", d.HTTPFailures, "HTTP failures that make a node unhealthy")
	timeouts := fs.Int("timeouts", d.Timeouts, "timeouts that make a node unhealthy")
	probing := fs.Int("probing-worker", 0, "the worker (from 1) that runs the checks; 0: the first to create a checker")
	purgeDelay := fs.Duration("purge-delay", d.PurgeDelay, "how long a changed upstream's dropped nodes stay listed with a purge_time")

	cost := fs.Bool("cost", false, "make requests cost what they cost APISIX 3.18's workers (apisixtest.DefaultCost)")
	c := apisixtest.DefaultCost()
	costData := fs.Duration("cost-data", c.Data, "with --cost: what a data-path request costs its worker")
	spin := fs.Duration("spin", c.SpinBelow, "with --cost: how much of the end of each wait to spin rather than sleep (0: sleep only)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: fake-apisix --control SOCKET [flags]\n\nA fake APISIX control API (and data path), steered through SOCKET; the control\nprotocol is described in package integration/fakeapi.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *control == "" {
		fmt.Fprintln(os.Stderr, "fake-apisix: --control is required")
		return 2
	}
	for name, v := range map[string]int{"--workers": *workers, "--successes": *successes, "--tcp-failures": *tcpFailures, "--http-failures": *httpFailures, "--timeouts": *timeouts} {
		if v < 1 || v > 254 {
			fmt.Fprintf(os.Stderr, "fake-apisix: %s: %d, want 1-254\n", name, v)
			return 2
		}
	}
	if *probing < 0 || *probing > *workers {
		fmt.Fprintf(os.Stderr, "fake-apisix: --probing-worker: %d, want 0-%d (--workers)\n", *probing, *workers)
		return 2
	}
	if *upstreams < 0 || *upstreams > 100000 || *nodes < 0 || *nodes > 100 {
		fmt.Fprintf(os.Stderr, "fake-apisix: --upstreams %d --nodes %d: want 0-100000 and 0-100\n", *upstreams, *nodes)
		return 2
	}
	for name, v := range map[string]int64{"--interval": int64(*interval), "--purge-delay": int64(*purgeDelay)} {
		if v <= 0 {
			fmt.Fprintf(os.Stderr, "fake-apisix: %s: want a duration > 0\n", name)
			return 2
		}
	}
	if *costData < 0 || *spin < 0 {
		fmt.Fprintln(os.Stderr, "fake-apisix: --cost-data and --spin: want durations >= 0")
		return 2
	}

	o := apisixtest.Options{Workers: *workers, PerRequest: *perRequest, Standalone: *standalone}
	if *checks {
		o.Checks = &apisixtest.Checks{
			HealthyInterval: *interval, UnhealthyInterval: *interval,
			Successes: *successes, TCPFailures: *tcpFailures, HTTPFailures: *httpFailures, Timeouts: *timeouts,
			Lazy: *lazy, ProbingWorker: *probing, PurgeDelay: *purgeDelay,
		}
	} else if *lazy {
		fmt.Fprintln(os.Stderr, "fake-apisix: --lazy needs --checks")
		return 2
	}
	if *cost {
		c.Data, c.SpinBelow = *costData, *spin
		o.Cost = c
	}
	srv := apisixtest.NewWith(o)
	srv.SetChunked(*chunked)
	srv.SetKeepaliveRequests(*keepalive)
	for _, r := range strings.Split(*healthy, ",") {
		if r == "" {
			continue
		}
		typ, id, ok := strings.Cut(r, "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "fake-apisix: --healthy: %q is not type/id\n", r)
			return 2
		}
		ref := health.Ref{Type: typ, ID: id}
		srv.SetNodes(ref, apisixtest.Node{IP: "192.0.2.1", Port: 80, Status: apisixtest.Healthy}, apisixtest.Node{IP: "192.0.2.2", Port: 80, Status: apisixtest.Healthy})
	}
	for i := 1; i <= *upstreams; i++ {
		srv.SetUpstream(health.Ref{Type: "upstreams", ID: strconv.Itoa(i)}, srv.FreshNodes(*nodes)...)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	e := fakeapi.Endpoints{Control: *control}
	var err error
	if e.API, err = srv.Listen("tcp", *listen); err != nil {
		fmt.Fprintf(os.Stderr, "fake-apisix: --listen: %v\n", err)
		return 1
	}
	if *dataListen != "" {
		if e.Data, err = srv.Listen("tcp", *dataListen); err != nil {
			e.API.Close()
			fmt.Fprintf(os.Stderr, "fake-apisix: --data-listen: %v\n", err)
			return 1
		}
	}
	if err := fakeapi.ServeAll(ctx, e, srv); err != nil {
		fmt.Fprintf(os.Stderr, "fake-apisix: %v\n", err)
		return 1
	}
	return 0
}
