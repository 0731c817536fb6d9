package apisixtest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
)

// Route sends data-path requests to a resource's nodes, as an APISIX route
// does.
type Route struct {
	// Host, when set, must equal the request's Host (without its port).
	Host string
	// Path, when set, must be a prefix of the request's path; the longest
	// matching Path wins, and among equal ones a route with a Host.
	Path string
	// Ref is the resource whose nodes serve the route: an upstream, a
	// service, or the route itself (an inline upstream).
	Ref apisix.Ref
}

// SetRoute creates or replaces the route with this id.
func (s *Server) SetRoute(id string, rt Route) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[id] = rt
}

// RemoveRoute deletes a route; deleting a missing one does nothing.
func (s *Server) RemoveRoute(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.routes, id)
}

// DataPath is the data-path handler: APISIX's proxy listener (9080). A
// request goes to the route that matches it (SetRoute) or, when none
// does, to the resource its path names, "/upstreams/api/…" for
// upstreams/api. It answers 200 when one of the resource's nodes is Alive,
// the backend's 500 when none is but one answers HTTPError, nginx's 504
// when the others hang (after the request's context ends or 60 s), and
// nginx's 502 when every node is Dead, as APISIX does after trying each
// node; 404 {"error_msg":"404 Route Not Found"} when nothing matches. It is
// served by the connection's worker, on its serving loop (Cost.Data), and
// with Checks.Lazy it asks that worker for the resource's checker, as
// proxying through APISIX does.
func (s *Server) DataPath() http.Handler { return http.HandlerFunc(s.serveData) }

// StartData serves the data path on a new loopback httptest.Server that
// Restart takes down with the API's. Close stops it.
func (s *Server) StartData() *httptest.Server { return s.start(s.DataPath()) }

// dataTimeout bounds a request to a hanging backend, as nginx's
// proxy_read_timeout does.
const dataTimeout = 60 * time.Second

func (s *Server) serveData(w http.ResponseWriter, r *http.Request) {
	wk := s.workerOf(r)
	arrival, start, finish := s.workers[wk].loop.reserve(kindData, s.costNow, s.cost.Data)
	s.dataLatency.add(finish.Sub(arrival))
	s.wait(start)
	s.mu.Lock()
	backend, found, nodes := s.proxy(r, wk)
	done := s.done
	s.mu.Unlock()
	s.wait(finish)
	switch {
	case !found:
		writePage(w, errorAnswer(http.StatusNotFound, "404 Route Not Found"))
	case nodes == 0:
		writePage(w, errorAnswer(http.StatusServiceUnavailable, "no valid upstream node"))
	case backend == Alive:
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	case backend == HTTPError:
		http.Error(w, "backend error", http.StatusInternalServerError)
	case backend == Hang:
		t := time.NewTimer(dataTimeout)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-done:
		case <-t.C:
		}
		writePage(w, nginxPage(http.StatusGatewayTimeout))
	default:
		writePage(w, nginxPage(http.StatusBadGateway))
	}
}

func writePage(w http.ResponseWriter, a answer) {
	w.Header().Set("Content-Type", a.contentType)
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// proxy finds r's resource, lets worker wk ask for its checker, and
// returns the best backend among its nodes (Alive, then HTTPError, then
// Hang, then Dead) and how many nodes it has. It runs under s.mu.
func (s *Server) proxy(r *http.Request, wk int) (best Backend, found bool, nodes int) {
	ref, ok := s.match(r)
	res := s.res[ref]
	if !ok || res == nil {
		return Dead, false, 0
	}
	s.request(wk, ref, res)
	rank := [...]int{Alive: 0, HTTPError: 1, Hang: 2, Dead: 3}
	best = Dead
	for _, n := range res.config {
		if b := s.backend(n.IP, n.Port); rank[b] < rank[best] {
			best = b
		}
	}
	return best, true, len(res.config)
}

// match finds the resource r is routed to. It runs under s.mu.
func (s *Server) match(r *http.Request) (apisix.Ref, bool) {
	host := r.Host
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.Contains(h, "[") {
		host = h
	}
	var best *Route
	ids := make([]string, 0, len(s.routes))
	for id := range s.routes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		rt := s.routes[id]
		if rt.Host != "" && rt.Host != host {
			continue
		}
		if !strings.HasPrefix(r.URL.Path, rt.Path) {
			continue
		}
		if best == nil || len(rt.Path) > len(best.Path) || (len(rt.Path) == len(best.Path) && best.Host == "" && rt.Host != "") {
			best = &rt
		}
	}
	if best != nil {
		return best.Ref, true
	}
	typ, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	id, _, _ := strings.Cut(rest, "/")
	if !slices.Contains(apisix.Types, typ) || id == "" {
		return apisix.Ref{}, false
	}
	return apisix.Ref{Type: typ, ID: id}, true
}
