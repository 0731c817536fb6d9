// Package fakeapi runs apisixtest's fake APISIX control API as a process
// (for the netns lab, where it must live in an ADC's network namespace) and
// steers it over a unix socket, which works across namespaces because it is
// a file. The control protocol is plain HTTP:
//
//	PUT    /nodes/{type}/{id}?status=healthy&count=2[&format=v2][&unhealthy=K]  create or replace a checker's nodes (the last K unhealthy)
//	POST   /status/{type}/{id}?status=unhealthy                   set every node's status
//	POST   /nochecker/{type}/{id}                                  the resource exists, no checker
//	DELETE /resources/{type}/{id}                                  the resource is gone (404 not found)
//	POST   /fault?fault=stall[&ref={type}/{id}]                    inject a fault; "none" clears it
//	GET    /requests                                               health requests served so far
//
// What makes the fake behave as APISIX over time (see apisixtest's package
// comment; the command's flags turn it on):
//
//	PUT    /upstreams/{type}/{id}?count=2 | ?nodes=ip:port,…      configure a resource's nodes, as an APISIX config change
//	PUT    /bulk?count=N[&nodes=2][&type=upstreams]                configure resources 1…N
//	POST   /backends/{type}/{id}?state=dead[&node=i]              every node's server (or node i's, from 0): alive, dead, http500, hang
//	POST   /backend?addr=ip:port&state=dead                       one server
//	PUT    /routes/{id}?ref={type}/{id}[&host=h][&path=/p]        a data-path route (default: /{type}/{id}/… reaches the resource)
//	DELETE /routes/{id}
//	POST   /restart?down=3s[&cold=1]                              refuse connections for down, then come back (cold: checkers anew)
//	GET    /checkers/{type}/{id}                                  {"workers":[1],"probing":1}: which workers have its checker, which probes
//	GET    /transitions[?ref={type}/{id}]                          node status changes with their times (apisixtest.Transition, JSON)
//	GET    /moving-reads/{type}/{id}                              n: one-resource answers that showed a node mostly_healthy or mostly_unhealthy
//	GET    /accounting                                            the serving loops' time per worker and kind, and the data path's loop latency (apisixtest.Accounting, JSON)
//	POST   /accounting/reset                                      start a new record
//
// Nodes configured by count get addresses of their own
// (apisixtest.Server.FreshNodes), so that killing one resource's servers
// leaves the others alive.
package fakeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
)

// Control returns the handler of the control protocol for srv.
func Control(srv *apisixtest.Server) http.Handler {
	mux := http.NewServeMux()
	addTimed(mux, srv)
	mux.HandleFunc("PUT /nodes/{type}/{id}", func(w http.ResponseWriter, r *http.Request) {
		ref := refOf(r)
		count, err := strconv.Atoi(orDefault(r.FormValue("count"), "2"))
		if err != nil || count < 0 || count > 10000 {
			http.Error(w, "count: want 0-10000", http.StatusBadRequest)
			return
		}
		status := orDefault(r.FormValue("status"), apisixtest.Healthy)
		// healthy, if given, makes the first that many nodes healthy and
		// the rest status (capacity thresholds).
		healthy, err := strconv.Atoi(orDefault(r.FormValue("healthy"), "0"))
		if err != nil || healthy < 0 || healthy > count {
			http.Error(w, "healthy: want 0-count", http.StatusBadRequest)
			return
		}
		unhealthy, err := strconv.Atoi(orDefault(r.FormValue("unhealthy"), "0"))
		if err != nil || unhealthy < 0 || unhealthy > count {
			http.Error(w, "unhealthy: want 0-count", http.StatusBadRequest)
			return
		}
		nodes := make([]apisixtest.Node, count)
		for i := range nodes {
			st := status
			if i < healthy {
				st = apisixtest.Healthy
			}
			nodes[i] = apisixtest.Node{IP: fmt.Sprintf("192.0.2.%d", i%250+1), Port: 8000 + i, Status: st}
			if i >= count-unhealthy {
				nodes[i].Status = apisixtest.Unhealthy
			}
		}
		srv.SetNodes(ref, nodes...)
		if f := r.FormValue("format"); f != "" {
			format := apisixtest.V3
			if f == "v2" {
				format = apisixtest.V2
			}
			srv.SetFormat(ref, format)
		}
	})
	mux.HandleFunc("POST /status/{type}/{id}", func(w http.ResponseWriter, r *http.Request) {
		if err := srv.SetAllStatus(refOf(r), r.FormValue("status")); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
		}
	})
	mux.HandleFunc("POST /nochecker/{type}/{id}", func(w http.ResponseWriter, r *http.Request) {
		srv.NoChecker(refOf(r))
	})
	mux.HandleFunc("DELETE /resources/{type}/{id}", func(w http.ResponseWriter, r *http.Request) {
		srv.Remove(refOf(r))
	})
	mux.HandleFunc("POST /fault", func(w http.ResponseWriter, r *http.Request) {
		f, err := apisixtest.ParseFault(r.FormValue("fault"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ref := r.FormValue("ref")
		if ref == "" {
			srv.SetGlobalFault(f)
		} else {
			typ, id, _ := strings.Cut(ref, "/")
			srv.SetFault(apisix.Ref{Type: typ, ID: id}, f)
		}
		if f == apisixtest.NoFault {
			srv.Release()
		}
	})
	mux.HandleFunc("GET /requests", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, srv.Requests())
	})
	return mux
}

func refOf(r *http.Request) apisix.Ref {
	return apisix.Ref{Type: r.PathValue("type"), ID: r.PathValue("id")}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Client steers a fake API through its control socket.
type Client struct {
	hc *http.Client
}

// NewClient returns a client for the control socket at path.
func NewClient(path string) *Client {
	return &Client{hc: &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}},
	}}
}

func (c *Client) do(method, path string) error {
	_, err := c.call(method, path)
	return err
}

// call makes one control request and returns the answer's body.
func (c *Client) call(method, path string) (string, error) {
	req, err := http.NewRequest(method, "http://fake"+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("fake api %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("fake api %s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// Requests is how many health requests the fake API has served.
func (c *Client) Requests() (int, error) {
	body, err := c.call("GET", "/requests")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(body))
	if err != nil {
		return 0, fmt.Errorf("fake api GET /requests: %w", err)
	}
	return n, nil
}

// SetNodes creates or replaces ref's checker with count nodes of status.
func (c *Client) SetNodes(ref apisix.Ref, count int, status string) error {
	return c.do("PUT", fmt.Sprintf("/nodes/%s/%s?count=%d&status=%s", ref.Type, ref.ID, count, status))
}

// SetHealthyOf replaces ref's checker with total nodes, the first healthy
// of them healthy and the others unhealthy.
func (c *Client) SetHealthyOf(ref apisix.Ref, healthy, total int) error {
	return c.do("PUT", fmt.Sprintf("/nodes/%s/%s?count=%d&healthy=%d&status=unhealthy", ref.Type, ref.ID, total, healthy))
}

// SetFormat switches ref to the 2.x ("v2") or 3.x ("v3") body format; the
// nodes are replaced by count nodes of status.
func (c *Client) SetFormat(ref apisix.Ref, format string, count int, status string) error {
	return c.do("PUT", fmt.Sprintf("/nodes/%s/%s?count=%d&status=%s&format=%s", ref.Type, ref.ID, count, status, format))
}

// SetMixed replaces ref's checker with healthy healthy nodes and unhealthy
// unhealthy ones (the degraded tier's share).
func (c *Client) SetMixed(ref apisix.Ref, healthy, unhealthy int) error {
	return c.do("PUT", fmt.Sprintf("/nodes/%s/%s?count=%d&unhealthy=%d", ref.Type, ref.ID, healthy+unhealthy, unhealthy))
}

// SetStatus sets every node of ref to status.
func (c *Client) SetStatus(ref apisix.Ref, status string) error {
	return c.do("POST", fmt.Sprintf("/status/%s/%s?status=%s", ref.Type, ref.ID, status))
}

// NoChecker makes ref a resource without a health checker.
func (c *Client) NoChecker(ref apisix.Ref) error {
	return c.do("POST", fmt.Sprintf("/nochecker/%s/%s", ref.Type, ref.ID))
}

// Remove deletes ref: APISIX then answers "not found".
func (c *Client) Remove(ref apisix.Ref) error {
	return c.do("DELETE", fmt.Sprintf("/resources/%s/%s", ref.Type, ref.ID))
}

// Fault injects f for every request, or for ref only when ref is not zero;
// "none" clears it.
func (c *Client) Fault(ref apisix.Ref, f string) error {
	q := "/fault?fault=" + f
	if ref != (apisix.Ref{}) {
		q += "&ref=" + ref.Type + "/" + ref.ID
	}
	return c.do("POST", q)
}

// Serve runs the fake API on api and its control handler on the unix socket
// at control until ctx is done. It closes api.
func Serve(ctx context.Context, api net.Listener, control string, srv *apisixtest.Server) error {
	return ServeAll(ctx, Endpoints{API: api, Control: control}, srv)
}

// Endpoints are where a fake APISIX serves.
type Endpoints struct {
	// API is the control API's listener, Data the data path's (nil: none).
	// Open them with srv.Listen so that a restart can take them down.
	API, Data net.Listener
	// Control is the unix socket of the control protocol.
	Control string
}

// ServeAll runs the fake API, its data path and its control handler until
// ctx is done, and calls srv.Tick every apisixtest.TickInterval meanwhile.
// It closes the listeners.
func ServeAll(ctx context.Context, e Endpoints, srv *apisixtest.Server) error {
	ctl, err := net.Listen("unix", e.Control)
	if err != nil {
		e.API.Close()
		if e.Data != nil {
			e.Data.Close()
		}
		return err
	}
	servers := []*http.Server{
		{Handler: srv, ReadHeaderTimeout: 5 * time.Second, ConnContext: srv.ConnContext},
		{Handler: Control(srv), ReadHeaderTimeout: 5 * time.Second},
	}
	listeners := []net.Listener{e.API, ctl}
	if e.Data != nil {
		servers = append(servers, &http.Server{Handler: srv.DataPath(), ReadHeaderTimeout: 5 * time.Second, ConnContext: srv.ConnContext})
		listeners = append(listeners, e.Data)
	}
	errc := make(chan error, len(servers))
	for i := range servers {
		go func() { errc <- servers[i].Serve(listeners[i]) }()
	}
	tctx, stopTicks := context.WithCancel(ctx)
	ticked := make(chan struct{})
	go func() { srv.Run(tctx); close(ticked) }()
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	stopTicks()
	<-ticked
	srv.Close() // frees stalled requests so Shutdown does not wait for them
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range servers {
		s.Shutdown(sctx)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
