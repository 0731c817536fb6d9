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
	"time"

	"github.com/rhi-daemon/rhi/integration/fakeapi"
	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
)

func main() { os.Exit(run()) }

func run() int {
	f, code := parseFlags(os.Args[1:])
	if f == nil {
		return code
	}
	srv, ok := f.server()
	if !ok {
		return 2
	}
	return serve(f, srv)
}

// flags are the command line's values.
type flags struct {
	listen, dataListen, control, healthy *string
	chunked, perRequest, standalone      *bool
	keepalive, workers, upstreams, nodes *int

	checks, lazy                                   *bool
	interval, purgeDelay                           *time.Duration
	successes, tcpFailures, httpFailures, timeouts *int
	probing                                        *int
	cost                                           *bool
	costData, spin                                 *time.Duration
}

// parseFlags reads and checks the command line; a nil result ends the
// run with the code.
func parseFlags(args []string) (*flags, int) {
	fs := flag.NewFlagSet("fake-apisix", flag.ContinueOnError)
	f := &flags{}
	f.listen = fs.String("listen", "127.0.0.1:9090", "address of the fake control API")
	f.dataListen = fs.String("data-listen", "", "address of the data path (APISIX's proxy listener); empty: none")
	f.control = fs.String("control", "", "unix socket to steer it (required)")
	f.healthy = fs.String("healthy", "", "comma-separated type/id resources to create with 2 healthy nodes")
	// APISIX answers chunked and closes a connection after 1000 answers
	// (nginx's keepalive_requests); the lab's defaults are off, so that its
	// figures compare with earlier ones.
	f.chunked = fs.Bool("chunked", false, "answer with chunked bodies, as APISIX does")
	f.keepalive = fs.Int("keepalive-requests", 0, "close a connection after this many answers, as nginx does (APISIX: 1000); 0: never")
	f.workers = fs.Int("workers", 1, "nginx workers: each has its own checkers and serving loop; a connection stays on one")
	f.perRequest = fs.Bool("per-request", false, "choose a worker for every request instead of every connection")
	f.standalone = fs.Bool("standalone", false, `name resources "/upstreams/1" as standalone (yaml) mode does, not "/apisix/upstreams/1"`)
	f.upstreams = fs.Int("upstreams", 0, "configure upstreams 1…N, each with --nodes nodes of their own addresses")
	f.nodes = fs.Int("nodes", 2, "nodes of each --upstreams upstream")

	f.checks = fs.Bool("checks", false, "run active health checks over time: statuses follow the servers that /backends kills and revives")
	d := apisixtest.DefaultChecks()
	f.lazy = fs.Bool("lazy", false, "create a worker's checker only when a data-path request reaches it (APISIX 3.14+)")
	f.interval = fs.Duration("interval", d.HealthyInterval, "active check interval, healthy and unhealthy nodes")
	f.successes = fs.Int("successes", d.Successes, "successful checks that make a node healthy")
	f.tcpFailures = fs.Int("tcp-failures", d.TCPFailures, "TCP failures that make a node unhealthy")
	f.httpFailures = fs.Int("http-failures", d.HTTPFailures, "HTTP failures that make a node unhealthy")
	f.timeouts = fs.Int("timeouts", d.Timeouts, "timeouts that make a node unhealthy")
	f.probing = fs.Int("probing-worker", 0, "the worker (from 1) that runs the checks; 0: the first to create a checker")
	f.purgeDelay = fs.Duration("purge-delay", d.PurgeDelay, "how long a changed upstream's dropped nodes stay listed with a purge_time")

	f.cost = fs.Bool("cost", false, "make requests cost what they cost APISIX 3.18's workers (apisixtest.DefaultCost)")
	c := apisixtest.DefaultCost()
	f.costData = fs.Duration("cost-data", c.Data, "with --cost: what a data-path request costs its worker")
	f.spin = fs.Duration("spin", c.SpinBelow, "with --cost: how much of the end of each wait to spin rather than sleep (0: sleep only)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: fake-apisix --control SOCKET [flags]\n\nA fake APISIX control API (and data path), steered through SOCKET; the control\nprotocol is described in package integration/fakeapi.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	if err := f.check(); err != nil {
		fmt.Fprintf(os.Stderr, "fake-apisix: %v\n", err)
		return nil, 2
	}
	return f, 0
}

// check says what is wrong with the flags' values, naming the flag.
func (f *flags) check() error {
	if *f.control == "" {
		return errors.New("--control is required")
	}
	for name, v := range map[string]int{"--workers": *f.workers, "--successes": *f.successes, "--tcp-failures": *f.tcpFailures, "--http-failures": *f.httpFailures, "--timeouts": *f.timeouts} {
		if v < 1 || v > 254 {
			return fmt.Errorf("%s: %d, want 1-254", name, v)
		}
	}
	if *f.probing < 0 || *f.probing > *f.workers {
		return fmt.Errorf("--probing-worker: %d, want 0-%d (--workers)", *f.probing, *f.workers)
	}
	if *f.upstreams < 0 || *f.upstreams > 100000 || *f.nodes < 0 || *f.nodes > 100 {
		return fmt.Errorf("--upstreams %d --nodes %d: want 0-100000 and 0-100", *f.upstreams, *f.nodes)
	}
	for name, v := range map[string]int64{"--interval": int64(*f.interval), "--purge-delay": int64(*f.purgeDelay)} {
		if v <= 0 {
			return fmt.Errorf("%s: want a duration > 0", name)
		}
	}
	if *f.costData < 0 || *f.spin < 0 {
		return errors.New("--cost-data and --spin: want durations >= 0")
	}
	if *f.lazy && !*f.checks {
		return errors.New("--lazy needs --checks")
	}
	return nil
}

// server builds the fake the flags describe, with its first resources.
func (f *flags) server() (*apisixtest.Server, bool) {
	o := apisixtest.Options{Workers: *f.workers, PerRequest: *f.perRequest, Standalone: *f.standalone}
	if *f.checks {
		o.Checks = &apisixtest.Checks{
			HealthyInterval: *f.interval, UnhealthyInterval: *f.interval,
			Successes: *f.successes, TCPFailures: *f.tcpFailures, HTTPFailures: *f.httpFailures, Timeouts: *f.timeouts,
			Lazy: *f.lazy, ProbingWorker: *f.probing, PurgeDelay: *f.purgeDelay,
		}
	}
	if *f.cost {
		c := apisixtest.DefaultCost()
		c.Data, c.SpinBelow = *f.costData, *f.spin
		o.Cost = c
	}
	srv := apisixtest.NewWith(o)
	srv.SetChunked(*f.chunked)
	srv.SetKeepaliveRequests(*f.keepalive)
	for _, r := range strings.Split(*f.healthy, ",") {
		if r == "" {
			continue
		}
		typ, id, ok := strings.Cut(r, "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "fake-apisix: --healthy: %q is not type/id\n", r)
			return nil, false
		}
		ref := apisix.Ref{Type: typ, ID: id}
		srv.SetNodes(ref, apisixtest.Node{IP: "192.0.2.1", Port: 80, Status: apisixtest.Healthy}, apisixtest.Node{IP: "192.0.2.2", Port: 80, Status: apisixtest.Healthy})
	}
	for i := 1; i <= *f.upstreams; i++ {
		srv.SetUpstream(apisix.Ref{Type: "upstreams", ID: strconv.Itoa(i)}, srv.FreshNodes(*f.nodes)...)
	}
	return srv, true
}

// serve listens where the flags say and serves until SIGINT or SIGTERM.
func serve(f *flags, srv *apisixtest.Server) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	e := fakeapi.Endpoints{Control: *f.control}
	var err error
	if e.API, err = srv.Listen("tcp", *f.listen); err != nil {
		fmt.Fprintf(os.Stderr, "fake-apisix: --listen: %v\n", err)
		return 1
	}
	if *f.dataListen != "" {
		if e.Data, err = srv.Listen("tcp", *f.dataListen); err != nil {
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
