package config

import (
	"strings"
	"testing"
	"time"
)

func TestFailOpenParse(t *testing.T) {
	c, err := Parse("rhi.yaml", []byte("fail_open:\n  min_other_sites: 2\n  hold: 500ms\n"), apisixKeys)
	if err != nil {
		t.Fatal(err)
	}
	want := FailOpen{MinOtherSites: 2, Hold: 500 * time.Millisecond}
	if c.FailOpen != want || !c.FailOpen.Enabled() {
		t.Errorf("got %+v, want %+v (enabled)", c.FailOpen, want)
	}
	c, err = Parse("rhi.yaml", []byte("fail_open: {min_other_sites: 1}\n"), apisixKeys)
	if err != nil {
		t.Fatal(err)
	}
	if want := (FailOpen{MinOtherSites: 1, Hold: 2 * time.Second}); c.FailOpen != want {
		t.Errorf("defaults: got %+v, want %+v", c.FailOpen, want)
	}
	d := Default()
	if d.FailOpen.Enabled() {
		t.Errorf("the guard is on by default: %+v", d.FailOpen)
	}
}

// TestFailOpenReleaseDeprecated: a file written for the guard that had a
// release time still starts rhi, and the key is named, with its line, in
// a warning; a bad value is still an error.
func TestFailOpenReleaseDeprecated(t *testing.T) {
	c, err := Parse("rhi.yaml", []byte("fail_open:\n  min_other_sites: 1\n  release: 30s\n"), apisixKeys)
	if err != nil {
		t.Fatal(err)
	}
	ws := Warnings(c)
	want := `rhi.yaml:3: fail_open.release: no longer used, ignored: a VIP whose health fails stays in the last-resort tier until min_other_sites other sites serve it for hold; delete the key (got "30s")`
	if len(ws) != 1 || ws[0] != want {
		t.Errorf("warnings %q, want [%q]", ws, want)
	}
	if c.FailOpen != (FailOpen{MinOtherSites: 1, Hold: 2 * time.Second}) {
		t.Errorf("got %+v", c.FailOpen)
	}
}

func TestFailOpenErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"fail_open:\n  min_other_sites: -1\n", `rhi.yaml:2: fail_open.min_other_sites: out of range (got "-1"; allowed: 0 (off) to 1000)`},
		{"fail_open:\n  min_other_sites: 1001\n", `rhi.yaml:2: fail_open.min_other_sites: out of range (got "1001"; allowed: 0 (off) to 1000)`},
		{"fail_open:\n  min_other_sites: two\n", `rhi.yaml:2: fail_open.min_other_sites: not a whole number (got "two"; allowed: 0 (off) to 1000)`},
		{"fail_open:\n  min_other_sites: 1\n  hold: 0s\n", `rhi.yaml:3: fail_open.hold: must be positive (got "0s")`},
		{"fail_open:\n  release: soon\n", `rhi.yaml:2: fail_open.release: not a duration (got "soon"; allowed: a duration such as 500ms, 3s or 1m, or whole seconds)`},
		{"fail_open:\n  min_sites: 1\n", `rhi.yaml:2: fail_open.min_sites: unknown key`},
	} {
		_, err := Parse("rhi.yaml", []byte(tc.yaml), apisixKeys)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %s", tc.yaml, err, tc.want)
		}
	}
}

// TestFailOpenReloadable: every fail_open key is compared by Diff and none
// needs a restart.
func TestFailOpenReloadable(t *testing.T) {
	a, b := Default(), Default()
	b.FailOpen = FailOpen{MinOtherSites: 1, Hold: time.Second}
	ch := Diff(&a, &b)
	if got := strings.Join(ch.Keys, ","); got != "fail_open.min_other_sites,fail_open.hold" {
		t.Errorf("keys %q", got)
	}
	if !ch.Reloadable() {
		t.Errorf("restart only: %v", ch.RestartOnly)
	}
}
