package health

import (
	"encoding/json"
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
		{"empty id", "/apisix/upstreams/", Ref{}, `id "" must be 1-64 characters of [A-Za-z0-9._-]`},
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

func TestVerdictString(t *testing.T) {
	want := map[Verdict]string{Failed: "failed", Up: "up", Down: "down", NoChecker: "no_checker", NotFound: "not_found", Verdict(9): "verdict(9)", Verdict(-1): "verdict(-1)"}
	for v, s := range want {
		if v.String() != s {
			t.Errorf("%d.String() = %q, want %q", int(v), v.String(), s)
		}
	}
	b, err := json.Marshal(map[string]Verdict{"k": NoChecker})
	if err != nil || string(b) != `{"k":"no_checker"}` {
		t.Errorf("json = %s, %v", b, err)
	}
}

// An Upstream prints as its key and reads back from it.
func TestUpstreamText(t *testing.T) {
	ups := MustUpstreams("/apisix/upstreams/api", "/routes/1")
	b, err := json.Marshal(ups)
	if err != nil || string(b) != `["/apisix/upstreams/api","/routes/1"]` {
		t.Fatalf("json = %s, %v", b, err)
	}
	var back []Upstream
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 2 || back[0] != ups[0] || back[1] != ups[1] {
		t.Errorf("read back %+v, %v; want %+v", back, err, ups)
	}
	if err := json.Unmarshal([]byte(`["/apisix/upstream/api"]`), &back); err == nil || !strings.Contains(err.Error(), `upstream "/apisix/upstream/api": unknown resource type`) {
		t.Errorf("bad key: err %v", err)
	}
}

func TestMustUpstreamsPanicsOnABadKey(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"/nope"`) {
			t.Errorf("recover() = %v, want a panic naming the key", r)
		}
	}()
	MustUpstreams("/nope")
}
