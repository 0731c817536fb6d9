package apisix

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Verdict is what one poll learned about one upstream key (SPEC §3).
type Verdict int

const (
	// Failed: the upstream could not be read (connection error, deadline,
	// 5xx, garbled or unexpected body, HTML, an unexpected 4xx).
	Failed Verdict = iota
	// Up: at least one node is healthy or mostly_healthy.
	Up
	// Down: nodes are listed and none of them is healthy.
	Down
	// NoChecker: APISIX has no health checker for the resource (404
	// "no checker for …", or an empty node list).
	NoChecker
	// NotFound: APISIX does not know the resource (404 "… not found").
	NotFound
)

var verdictNames = [...]string{Failed: "failed", Up: "up", Down: "down", NoChecker: "no_checker", NotFound: "not_found"}

func (v Verdict) String() string {
	if int(v) >= 0 && int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// MarshalText makes verdicts readable in JSON and logs.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// Result is the outcome of reading one upstream key.
type Result struct {
	Verdict Verdict
	Healthy int   // nodes counted healthy
	Total   int   // nodes considered (purge_time nodes excluded)
	Err     error // why the verdict is Failed, NotFound or NoChecker; nil otherwise
}

// Snapshot maps each upstream key of the config (e.g. "/apisix/upstreams/api")
// to what one poll learned about it.
type Snapshot map[string]Result

// Ref is a control-API resource: its type ("upstreams", "routes", "services",
// "stream_routes") and id.
type Ref struct {
	Type string
	ID   string
}

// Path is the control-API path of the resource's health checker, with type
// and id path-escaped. ParseRef only admits ids that need no escaping; the
// escaping keeps a Ref built by hand from changing the path's shape.
func (r Ref) Path() string {
	return "/v1/healthcheck/" + url.PathEscape(r.Type) + "/" + url.PathEscape(r.ID)
}

// String is the resource as "<type>/<id>", for messages.
func (r Ref) String() string { return r.Type + "/" + r.ID }

// Types are the resource types that can carry a health checker.
var Types = []string{"upstreams", "routes", "services", "stream_routes"}

var idRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParseRef reads an upstream key, `/<prefix…>/<type>/<id>` or `/<type>/<id>`.
// Only the last two segments matter: the etcd prefix varies and standalone
// mode has none.
func ParseRef(key string) (Ref, error) {
	if !strings.HasPrefix(key, "/") {
		return Ref{}, fmt.Errorf("must start with \"/\"")
	}
	segs := strings.Split(key[1:], "/")
	if len(segs) < 2 {
		return Ref{}, fmt.Errorf("must be /<type>/<id> or /<prefix>/<type>/<id>")
	}
	for _, s := range segs[:len(segs)-2] {
		if s == "" {
			return Ref{}, fmt.Errorf("empty path segment")
		}
	}
	typ, id := segs[len(segs)-2], segs[len(segs)-1]
	if !validType(typ) {
		return Ref{}, fmt.Errorf("unknown resource type %q (allowed: %s)", typ, strings.Join(Types, ", "))
	}
	if !idRE.MatchString(id) {
		return Ref{}, fmt.Errorf("id %q must be 1-64 characters of [A-Za-z0-9._-]", id)
	}
	if id == "." || id == ".." {
		// APISIX's own rule admits them, but a URL path cannot address
		// them: a server normalises them away and would answer for
		// another resource, or for the list.
		return Ref{}, fmt.Errorf("id %q cannot be addressed in a URL path", id)
	}
	return Ref{Type: typ, ID: id}, nil
}

func validType(t string) bool {
	for _, x := range Types {
		if t == x {
			return true
		}
	}
	return false
}
