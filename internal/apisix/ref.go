package apisix

import (
	"fmt"
	"strconv"
	"strings"
)

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
// expression), for a Ref built by hand (the fake control API's requests).
func (r Ref) Check() error {
	if !ValidType(r.Type) {
		return typeError(r.Type)
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

// typeError is an unknown resource type. It also says its parts apart, so
// that the config's message lists the types as it lists any key's allowed
// values.
type typeError string

func (t typeError) Error() string   { return t.Problem() + " (allowed: " + t.Allowed() + ")" }
func (t typeError) Problem() string { return "unknown resource type " + strconv.Quote(string(t)) }
func (t typeError) Allowed() string { return strings.Join(Types, ", ") }

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

// ParseRef reads an upstream key, `/<prefix…>/<type>/<id>` or `/<type>/<id>`
// (APISIX's etcd key of the resource). Only the last two segments matter:
// the etcd prefix varies and standalone mode has none.
func ParseRef(key string) (Ref, error) {
	switch {
	case !strings.HasPrefix(key, "/"):
		return Ref{}, fmt.Errorf("must start with \"/\"")
	case strings.HasSuffix(key, "/"):
		return Ref{}, fmt.Errorf(`must not end with "/"`)
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

// UpstreamKey is the rule the configuration checks upstream keys by
// (config.KeyRule): the resource a key reads, "<type>/<id>", which keys
// under different etcd prefixes share, or why APISIX has no such resource.
func UpstreamKey(key string) (resource string, err error) {
	ref, err := ParseRef(key)
	if err != nil {
		return "", err
	}
	return ref.String(), nil
}
