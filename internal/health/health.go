// Package health is rhi's shared vocabulary for upstream health: which
// control-API resource an upstream key names (Ref, ParseRef), what one poll
// learned about it (Verdict, Result) and about all of them (Snapshot). The
// APISIX client produces these words, config stores them, and decide,
// daemon and verify consume them. It uses the standard library only (and no
// net/http): the pure core must build without the HTTP client.
package health

import (
	"fmt"
	"strings"
)

// Verdict is what one poll learned about one upstream key.
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
	Healthy int // nodes counted healthy
	Total   int // nodes considered (purge_time nodes excluded)
	// Moving counts the nodes of Total that APISIX's checker is moving
	// between states: mostly_healthy (failing, not yet unhealthy) or
	// mostly_unhealthy (recovering, not yet healthy). Only the 3.3+
	// format says; the 2.x one leaves it 0.
	Moving int
	Err    error // why the verdict is Failed, NotFound or NoChecker; nil otherwise
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

// String is the resource as "<type>/<id>", for messages.
func (r Ref) String() string { return r.Type + "/" + r.ID }

// Check reports whether r is a resource ParseRef could have returned: a
// known type and an id that a URL path can address. It is cheap (no regular
// expression), so a poll can afford it for a Ref built by hand.
func (r Ref) Check() error {
	if !ValidType(r.Type) {
		return fmt.Errorf("unknown resource type %q (allowed: %s)", r.Type, strings.Join(Types, ", "))
	}
	if !validID(r.ID) {
		return fmt.Errorf("id %q must be 1-64 characters of [A-Za-z0-9._-]", r.ID)
	}
	if r.ID == "." || r.ID == ".." {
		// APISIX's own rule admits them, but a URL path cannot address
		// them: a server normalises them away and would answer for
		// another resource, or for the list.
		return fmt.Errorf("id %q cannot be addressed in a URL path", r.ID)
	}
	return nil
}

// Types are the resource types that can carry a health checker.
var Types = []string{"upstreams", "routes", "services", "stream_routes"}

// ValidType reports whether t is one of Types.
func ValidType(t string) bool {
	for _, x := range Types {
		if t == x {
			return true
		}
	}
	return false
}

// validID is APISIX's id rule, ^[A-Za-z0-9._-]{1,64}$.
func validID(id string) bool {
	if len(id) < 1 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

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
	ref := Ref{Type: segs[len(segs)-2], ID: segs[len(segs)-1]}
	if err := ref.Check(); err != nil {
		return Ref{}, err
	}
	return ref, nil
}

// Upstream is one upstream key as the config writes it, with the resource it
// names, parsed once when the config is read. Snapshots are keyed by Key;
// the client reads Ref. Keys with different etcd prefixes may share a Ref.
type Upstream struct {
	Key string // e.g. "/apisix/upstreams/api"
	Ref Ref
	// MinHealthy is the capacity threshold (min_healthy); zero: none, up
	// with one healthy node. See decide.Met.
	MinHealthy MinHealthy
}

// ParseUpstream parses key into an Upstream; see ParseRef.
func ParseUpstream(key string) (Upstream, error) {
	ref, err := ParseRef(key)
	if err != nil {
		return Upstream{}, err
	}
	return Upstream{Key: key, Ref: ref}, nil
}

// MustUpstreams parses keys that are known to be valid, as in tests and
// literals; it panics on a bad one.
func MustUpstreams(keys ...string) []Upstream {
	ups := make([]Upstream, len(keys))
	for i, k := range keys {
		u, err := ParseUpstream(k)
		if err != nil {
			panic(fmt.Sprintf("health.MustUpstreams(%q): %v", k, err))
		}
		ups[i] = u
	}
	return ups
}

// MarshalText writes the key as the config has it, so that a Config prints
// (YAML, JSON) as it was written.
func (u Upstream) MarshalText() ([]byte, error) { return []byte(u.Key), nil }

// UnmarshalText reads a key with ParseUpstream.
func (u *Upstream) UnmarshalText(b []byte) error {
	p, err := ParseUpstream(string(b))
	if err != nil {
		return fmt.Errorf("upstream %q: %w", b, err)
	}
	*u = p
	return nil
}
