package fakeapi

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
)

// maxNodes bounds the nodes of one resource and maxBulk the resources of
// one bulk request.
const (
	maxNodes = 10000
	maxBulk  = 100000
)

// parseNodes reads "ip:port,ip:port".
func parseNodes(s string) ([]apisixtest.Node, error) {
	var nodes []apisixtest.Node
	for _, hp := range strings.Split(s, ",") {
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			return nil, fmt.Errorf("nodes: %q: %v", hp, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("nodes: %q: port %q is not 1-65535", hp, port)
		}
		nodes = append(nodes, apisixtest.Node{IP: host, Port: p})
	}
	if len(nodes) > maxNodes {
		return nil, fmt.Errorf("nodes: %d, at most %d", len(nodes), maxNodes)
	}
	return nodes, nil
}

// intParam reads an integer form value in [lo, hi], def when absent.
func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.FormValue(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s: %q, want %d-%d", name, v, lo, hi)
	}
	return n, nil
}

// addTimed registers the handlers of the behaviour over time.
func addTimed(mux *http.ServeMux, srv *apisixtest.Server) {
	addResources(mux, srv)
	addBackends(mux, srv)
	addRoutesAndRestart(mux, srv)
	addRecords(mux, srv)
}

func fail(w http.ResponseWriter, err error, code int) { http.Error(w, err.Error(), code) }

// addResources registers the handlers that configure resources' nodes.
func addResources(mux *http.ServeMux, srv *apisixtest.Server) {
	mux.HandleFunc("PUT /upstreams/{type}/{id}", func(w http.ResponseWriter, r *http.Request) {
		ref := refOf(r)
		if err := ref.Check(); err != nil {
			fail(w, err, http.StatusBadRequest)
			return
		}
		var nodes []apisixtest.Node
		if v := r.FormValue("nodes"); v != "" {
			var err error
			if nodes, err = parseNodes(v); err != nil {
				fail(w, err, http.StatusBadRequest)
				return
			}
		} else {
			count, err := intParam(r, "count", 2, 0, maxNodes)
			if err != nil {
				fail(w, err, http.StatusBadRequest)
				return
			}
			nodes = srv.FreshNodes(count)
		}
		srv.SetUpstream(ref, nodes...)
	})
	mux.HandleFunc("PUT /bulk", func(w http.ResponseWriter, r *http.Request) {
		count, err := intParam(r, "count", 0, 1, maxBulk)
		if err != nil {
			fail(w, err, http.StatusBadRequest)
			return
		}
		per, err := intParam(r, "nodes", 2, 0, 100)
		if err != nil {
			fail(w, err, http.StatusBadRequest)
			return
		}
		typ := orDefault(r.FormValue("type"), "upstreams")
		if !apisix.ValidType(typ) {
			fail(w, fmt.Errorf("type: %q is not one of %s", typ, strings.Join(apisix.Types, ", ")), http.StatusBadRequest)
			return
		}
		for i := 1; i <= count; i++ {
			srv.SetUpstream(apisix.Ref{Type: typ, ID: strconv.Itoa(i)}, srv.FreshNodes(per)...)
		}
	})
}

// addBackends registers the handlers that kill and revive nodes' servers.
func addBackends(mux *http.ServeMux, srv *apisixtest.Server) {
	mux.HandleFunc("POST /backends/{type}/{id}", func(w http.ResponseWriter, r *http.Request) {
		ref := refOf(r)
		b, err := apisixtest.ParseBackend(r.FormValue("state"))
		if err != nil {
			fail(w, err, http.StatusBadRequest)
			return
		}
		cfg := srv.Config(ref)
		if cfg == nil {
			fail(w, fmt.Errorf("no resource %q", ref.String()), http.StatusNotFound)
			return
		}
		if r.FormValue("node") == "" {
			_ = srv.SetBackends(ref, b)
			return
		}
		i, err := intParam(r, "node", 0, 0, len(cfg)-1)
		if err != nil {
			fail(w, err, http.StatusBadRequest)
			return
		}
		srv.SetBackend(cfg[i].IP, cfg[i].Port, b)
	})
	mux.HandleFunc("POST /backend", func(w http.ResponseWriter, r *http.Request) {
		b, err := apisixtest.ParseBackend(r.FormValue("state"))
		if err != nil {
			fail(w, err, http.StatusBadRequest)
			return
		}
		nodes, err := parseNodes(r.FormValue("addr"))
		if err != nil || len(nodes) != 1 {
			fail(w, fmt.Errorf("addr: %q is not one ip:port", r.FormValue("addr")), http.StatusBadRequest)
			return
		}
		srv.SetBackend(nodes[0].IP, nodes[0].Port, b)
	})
}

// addRoutesAndRestart registers the data-path routes and the restart.
func addRoutesAndRestart(mux *http.ServeMux, srv *apisixtest.Server) {
	mux.HandleFunc("PUT /routes/{id}", func(w http.ResponseWriter, r *http.Request) {
		typ, id, ok := strings.Cut(r.FormValue("ref"), "/")
		ref := apisix.Ref{Type: typ, ID: id}
		if !ok || ref.Check() != nil {
			fail(w, fmt.Errorf("ref: %q is not type/id", r.FormValue("ref")), http.StatusBadRequest)
			return
		}
		srv.SetRoute(r.PathValue("id"), apisixtest.Route{Host: r.FormValue("host"), Path: r.FormValue("path"), Ref: ref})
	})
	mux.HandleFunc("DELETE /routes/{id}", func(w http.ResponseWriter, r *http.Request) {
		srv.RemoveRoute(r.PathValue("id"))
	})
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		down, err := time.ParseDuration(orDefault(r.FormValue("down"), "3s"))
		if err != nil || down < 0 || down > time.Hour {
			fail(w, fmt.Errorf("down: %q, want a duration of 0-1h", r.FormValue("down")), http.StatusBadRequest)
			return
		}
		cold, err := strconv.ParseBool(orDefault(r.FormValue("cold"), "false"))
		if err != nil {
			fail(w, fmt.Errorf("cold: %q, want true or false", r.FormValue("cold")), http.StatusBadRequest)
			return
		}
		srv.Restart(down, cold)
	})
}

// addRecords registers the handlers that read what the fake recorded.
func addRecords(mux *http.ServeMux, srv *apisixtest.Server) {
	mux.HandleFunc("GET /checkers/{type}/{id}", func(w http.ResponseWriter, r *http.Request) {
		have, probing := srv.CheckerWorkers(refOf(r))
		writeJSON(w, Checkers{Workers: have, Probing: probing})
	})
	mux.HandleFunc("GET /transitions", func(w http.ResponseWriter, r *http.Request) {
		var ref apisix.Ref
		if v := r.FormValue("ref"); v != "" {
			typ, id, ok := strings.Cut(v, "/")
			ref = apisix.Ref{Type: typ, ID: id}
			if !ok || ref.Check() != nil {
				fail(w, fmt.Errorf("ref: %q is not type/id", v), http.StatusBadRequest)
				return
			}
		}
		tr := srv.Transitions(ref)
		if tr == nil {
			tr = []apisixtest.Transition{}
		}
		writeJSON(w, tr)
	})
	mux.HandleFunc("GET /moving-reads/{type}/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, srv.MovingReads(refOf(r)))
	})
	mux.HandleFunc("GET /accounting", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, srv.Accounting())
	})
	mux.HandleFunc("POST /accounting/reset", func(w http.ResponseWriter, r *http.Request) {
		srv.ResetAccounting()
	})
}

// Checkers tells which workers (from 1) have a resource's checker, and
// which worker probes (0: none yet).
type Checkers struct {
	Workers []int `json:"workers"`
	Probing int   `json:"probing"`
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// SetUpstream configures ref with count nodes of their own addresses, as
// an APISIX config change does (see apisixtest.Server.SetUpstream).
func (c *Client) SetUpstream(ref apisix.Ref, count int) error {
	return c.do("PUT", fmt.Sprintf("/upstreams/%s/%s?count=%d", ref.Type, ref.ID, count))
}

// SetUpstreamNodes configures ref with these "ip:port" nodes.
func (c *Client) SetUpstreamNodes(ref apisix.Ref, nodes ...string) error {
	q := url.Values{"nodes": {strings.Join(nodes, ",")}}
	return c.do("PUT", fmt.Sprintf("/upstreams/%s/%s?%s", ref.Type, ref.ID, q.Encode()))
}

// Bulk configures upstreams 1…count with nodes nodes each.
func (c *Client) Bulk(count, nodes int) error {
	return c.do("PUT", fmt.Sprintf("/bulk?count=%d&nodes=%d", count, nodes))
}

// SetBackends sets the server of every node of ref to state ("alive",
// "dead", "http500", "hang").
func (c *Client) SetBackends(ref apisix.Ref, state string) error {
	return c.do("POST", fmt.Sprintf("/backends/%s/%s?state=%s", ref.Type, ref.ID, url.QueryEscape(state)))
}

// SetBackend sets the server of ref's i-th node (from 0) to state.
func (c *Client) SetBackend(ref apisix.Ref, i int, state string) error {
	return c.do("POST", fmt.Sprintf("/backends/%s/%s?node=%d&state=%s", ref.Type, ref.ID, i, url.QueryEscape(state)))
}

// SetRoute routes data-path requests with this host (if not empty) and
// path prefix to ref.
func (c *Client) SetRoute(id string, ref apisix.Ref, host, path string) error {
	q := url.Values{"ref": {ref.Type + "/" + ref.ID}, "host": {host}, "path": {path}}
	return c.do("PUT", "/routes/"+url.PathEscape(id)+"?"+q.Encode())
}

// Restart makes the fake refuse connections for down, then come back with
// its state, or cold with its checkers to build again.
func (c *Client) Restart(down time.Duration, cold bool) error {
	return c.do("POST", fmt.Sprintf("/restart?down=%s&cold=%t", down, cold))
}

// Checkers tells which workers have ref's checker and which one probes.
func (c *Client) Checkers(ref apisix.Ref) (Checkers, error) {
	var ck Checkers
	return ck, c.getJSON(fmt.Sprintf("/checkers/%s/%s", ref.Type, ref.ID), &ck)
}

// Accounting is the fake's record of its serving loops.
func (c *Client) Accounting() (apisixtest.Accounting, error) {
	var a apisixtest.Accounting
	return a, c.getJSON("/accounting", &a)
}

// Transitions are the status changes of ref's nodes (of every resource for
// the zero Ref), oldest first; see apisixtest.Server.Transitions. Ref is
// left zero in each: Resource names it.
func (c *Client) Transitions(ref apisix.Ref) ([]apisixtest.Transition, error) {
	path := "/transitions"
	if ref != (apisix.Ref{}) {
		path += "?ref=" + url.QueryEscape(ref.Type+"/"+ref.ID)
	}
	var tr []apisixtest.Transition
	return tr, c.getJSON(path, &tr)
}

// MovingReads is the number of one-resource answers for ref that showed a
// node mostly_healthy or mostly_unhealthy; see
// apisixtest.Server.MovingReads.
func (c *Client) MovingReads(ref apisix.Ref) (int, error) {
	var n int
	return n, c.getJSON("/moving-reads/"+url.PathEscape(ref.Type)+"/"+url.PathEscape(ref.ID), &n)
}

// ResetAccounting starts a new record.
func (c *Client) ResetAccounting() error { return c.do("POST", "/accounting/reset") }

func (c *Client) getJSON(path string, v any) error {
	body, err := c.call("GET", path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		return fmt.Errorf("fake api GET %s: %w", path, err)
	}
	return nil
}
