package health

import (
	"encoding/json"
	"testing"
)

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

// An Upstream prints as its key, as the config wrote it.
func TestUpstreamText(t *testing.T) {
	b, err := json.Marshal(Upstreams("/apisix/upstreams/api", "/routes/1"))
	if err != nil || string(b) != `["/apisix/upstreams/api","/routes/1"]` {
		t.Fatalf("json = %s, %v", b, err)
	}
}

// KeyPlan makes each key its own resource, in order.
func TestKeyPlan(t *testing.T) {
	ups := Upstreams("/a/upstreams/1", "/upstreams/1", "x")
	p := KeyPlan(ups)
	if p.Resources() != 3 || &p.Upstreams()[0] != &ups[0] {
		t.Fatalf("Resources %d, Upstreams %v", p.Resources(), p.Upstreams())
	}
	for i := range ups {
		if j, ok := p.KeyResource(i); !ok || j != i {
			t.Errorf("KeyResource(%d) = %d, %v", i, j, ok)
		}
	}
}

func TestShortKey(t *testing.T) {
	for in, want := range map[string]string{
		"/apisix/upstreams/api": "upstreams/api", "/upstreams/api": "upstreams/api",
		"/api": "/api", "api": "api", "a/b": "a/b", "/a/b/c/d": "c/d", "": "",
	} {
		if got := ShortKey(in); got != want {
			t.Errorf("ShortKey(%q) = %q, want %q", in, got, want)
		}
	}
}
