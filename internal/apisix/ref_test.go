package apisix

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	tests := []struct {
		name, key string
		want      Ref
		wantErr   string
	}{
		{"etcd prefix", "/apisix/upstreams/api", Ref{Type: "upstreams", ID: "api"}, ""},
		{"standalone", "/routes/r1", Ref{Type: "routes", ID: "r1"}, ""},
		{"deep prefix", "/a/b/c/stream_routes/x.y-z_1", Ref{Type: "stream_routes", ID: "x.y-z_1"}, ""},
		{"service", "/services/" + strings.Repeat("a", 64), Ref{Type: "services", ID: strings.Repeat("a", 64)}, ""},
		{"no leading slash", "apisix/upstreams/api", Ref{}, `must start with "/"`},
		{"one segment", "/api", Ref{}, "must be /<type>/<id> or /<prefix>/<type>/<id>"},
		{"empty prefix segment", "/apisix//upstreams/api", Ref{}, "empty path segment"},
		{"unknown type", "/apisix/upstream/api", Ref{}, `unknown resource type "upstream" (allowed: upstreams, routes, services, stream_routes)`},
		{"trailing slash", "/apisix/upstreams/", Ref{}, `must not end with "/"`},
		{"root", "/", Ref{}, `must not end with "/"`},
		{"id of 65", "/upstreams/" + strings.Repeat("a", 65), Ref{}, `id "` + strings.Repeat("a", 65) + `" must be 1-64 characters of [A-Za-z0-9._-]`},
		{"bad id character", "/upstreams/a b", Ref{}, `id "a b" must be 1-64 characters of [A-Za-z0-9._-]`},
		{"dot", "/upstreams/.", Ref{}, `id "." cannot be addressed in a URL path`},
		{"dot dot", "/apisix/upstreams/..", Ref{}, `id ".." cannot be addressed in a URL path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRef(tt.key)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tt.want || gotErr != tt.wantErr {
				t.Errorf("ParseRef(%q) = %v, %q; want %v, %q", tt.key, got, gotErr, tt.want, tt.wantErr)
			}
			if err == nil {
				if err := got.Check(); err != nil {
					t.Errorf("Check of a parsed ref: %v", err)
				}
			}
		})
	}
}

// The byte loop that replaced the regular expression admits exactly the same
// ids.
func TestValidIDMatchesAPISIXRule(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	ids := []string{"", "a", "A-z_0.9", strings.Repeat("x", 64), strings.Repeat("x", 65), "a/b", "a b", "ü", "a\x00", "a%2F", "-", "..", "a\n"}
	for c := 0; c < 256; c++ {
		ids = append(ids, string(rune(c)), "a"+string([]byte{byte(c)}))
	}
	for _, id := range ids {
		if got, want := validID(id), re.MatchString(id); got != want {
			t.Errorf("validID(%q) = %v, the rule says %v", id, got, want)
		}
	}
}

// A Ref built by hand is refused by Check the way ParseRef would refuse its
// key.
func TestRefCheck(t *testing.T) {
	for _, r := range []Ref{{}, {Type: "upstreams"}, {Type: "upstream", ID: "a"}, {Type: "upstreams", ID: ".."}, {Type: "upstreams", ID: "a/b"}} {
		if r.Check() == nil {
			t.Errorf("Check(%#v) = nil, want an error", r)
		}
	}
}

// UpstreamKey names a key's resource as Plan.Lookup names it, the same for
// every etcd prefix, and refuses what ParseRef refuses.
func TestUpstreamKey(t *testing.T) {
	for _, k := range []string{"/apisix/upstreams/api", "/upstreams/api", "/x/y/upstreams/api"} {
		if r, err := UpstreamKey(k); r != "upstreams/api" || err != nil {
			t.Errorf("UpstreamKey(%q) = %q, %v", k, r, err)
		}
	}
	if r, err := UpstreamKey("/apisix/upstream/api"); err == nil || r != "" {
		t.Errorf("a bad type: %q, %v", r, err)
	}
}
