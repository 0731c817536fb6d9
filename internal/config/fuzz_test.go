package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse checks Parse's contract on arbitrary input: it never panics;
// a failure is a non-empty Errors in which each problem has a key path or,
// for a document-level or syntax problem, a line, and prints on one line;
// a success is a config that obeys the documented invariants and survives
// a round trip through Format.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"testdata/*.yaml", "testdata/valid/*.yaml", "testdata/invalid/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data, apisixKeys)
		if err != nil {
			checkErrors(t, err)
			return
		}
		checkInvariants(t, c)
		out, err := Format(c)
		if err != nil {
			t.Fatalf("Format: %v", err)
		}
		back, err := Parse("formatted", out, apisixKeys)
		if err != nil {
			t.Fatalf("Parse(Format(c)): %v\n%s", err, out)
		}
		if diff := cmp.Diff(c, back, cmpConfig); diff != "" {
			t.Fatalf("round trip (-parsed +reparsed):\n%s", diff)
		}
	})
}

func checkErrors(t *testing.T, err error) {
	t.Helper()
	var errs Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("error %T %q is not a non-empty Errors", err, err)
	}
	for _, p := range errs {
		if p.Path == "" && p.Line == 0 && !strings.HasPrefix(p.Msg, "invalid YAML: ") {
			t.Errorf("problem %q has neither a path nor a line and is not a syntax error", p)
		}
		if p.Msg == "" || p.File != "f.yaml" || p.Line < 0 {
			t.Errorf("malformed problem %#v", p)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != len(errs) {
		t.Errorf("Error() has %d lines for %d problems:\n%s", n, len(errs), err)
	}
}

func checkInvariants(t *testing.T, c *Config) {
	t.Helper()
	if c.PollInterval <= 0 || c.Timeout <= 0 || c.Bird.Timeout <= 0 {
		t.Errorf("non-positive duration in %+v", c)
	}
	if c.Rise < 1 || c.Fall < 1 || c.FailurePolicy.MaxFailedPolls < 1 {
		t.Errorf("count below 1 in %+v", c)
	}
	seen := map[string]bool{}
	for _, v := range c.VIPs {
		a := v.Address.Addr()
		if !v.Address.IsValid() || v.Address.Bits() != a.BitLen() || a.Zone() != "" || a.Is4In6() {
			t.Errorf("bad VIP address %v", v.Address)
		}
		if seen[v.Address.String()] {
			t.Errorf("duplicate VIP %v", v.Address)
		}
		seen[v.Address.String()] = true
		if len(v.Upstreams) == 0 || v.Rise < 1 || v.Fall < 1 || (v.Condition != All && v.Condition != Any) {
			t.Errorf("bad VIP %+v", v)
		}
	}
}
