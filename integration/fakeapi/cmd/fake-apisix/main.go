// Command fake-apisix serves a fake APISIX control API for the netns lab and
// the demo, steered through a unix socket (see package fakeapi).
//
//	fake-apisix --listen 127.0.0.1:9090 --control /run/lab/dc1-api.sock \
//	    --healthy upstreams/api,upstreams/auth
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rhi-daemon/rhi/integration/fakeapi"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/health"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9090", "address of the fake control API")
	control := flag.String("control", "", "unix socket to steer it (required)")
	healthy := flag.String("healthy", "", "comma-separated type/id resources to create with 2 healthy nodes")
	// APISIX answers chunked and closes a connection after 1000 answers
	// (nginx's keepalive_requests); the lab's defaults are off, so that its
	// figures compare with earlier ones.
	chunked := flag.Bool("chunked", false, "answer with chunked bodies, as APISIX does")
	keepalive := flag.Int("keepalive-requests", 0, "close a connection after this many answers, as nginx does (APISIX: 1000); 0: never")
	flag.Parse()
	if *control == "" {
		fmt.Fprintln(os.Stderr, "fake-apisix: --control is required")
		os.Exit(2)
	}
	srv := apisixtest.New()
	srv.SetChunked(*chunked)
	srv.SetKeepaliveRequests(*keepalive)
	for _, r := range strings.Split(*healthy, ",") {
		if r == "" {
			continue
		}
		typ, id, ok := strings.Cut(r, "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "fake-apisix: --healthy: %q is not type/id\n", r)
			os.Exit(2)
		}
		ref := health.Ref{Type: typ, ID: id}
		srv.SetNodes(ref, apisixtest.Node{IP: "192.0.2.1", Port: 80, Status: apisixtest.Healthy}, apisixtest.Node{IP: "192.0.2.2", Port: 80, Status: apisixtest.Healthy})
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake-apisix: %v\n", err)
		os.Exit(1)
	}
	if err := fakeapi.Serve(ctx, ln, *control, srv); err != nil {
		fmt.Fprintf(os.Stderr, "fake-apisix: %v\n", err)
		os.Exit(1)
	}
}
