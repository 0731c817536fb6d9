package apisix

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rhi-daemon/rhi/internal/health"
)

// TestPlanAgainstMap holds a Plan to the maps a poll used to build: the
// same distinct resources in the order of their first key, each key's
// resource, invalid keys left out, and Lookup finding exactly the
// resources the keys name, on random keys that repeat resources under
// other prefixes and some that name no resource.
func TestPlanAgainstMap(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		ups := randomUpstreams(rng, rng.IntN(300))
		p := NewPlan(ups)

		jobOf := map[Ref]int{}
		var refs []Ref
		for i, u := range ups {
			j, ok := p.KeyResource(i)
			ref, err := ParseRef(u.Key)
			if err != nil {
				if ok {
					t.Fatalf("seed %d: key %d (%q) is invalid, plan gives resource %d", seed, i, u.Key, j)
				}
				continue
			}
			want, seen := jobOf[ref]
			if !seen {
				want = len(refs)
				jobOf[ref] = want
				refs = append(refs, ref)
			}
			if !ok || j != want {
				t.Fatalf("seed %d: key %d (%q): resource %d, %v; want %d", seed, i, u.Key, j, ok, want)
			}
		}
		if p.Resources() != len(refs) {
			t.Fatalf("seed %d: %d resources, want %d", seed, p.Resources(), len(refs))
		}
		for j, ref := range refs {
			if got := p.Resource(j); got != ref {
				t.Fatalf("seed %d: resource %d is %v, want %v", seed, j, got, ref)
			}
			if got, ok := p.Lookup([]byte(ref.String())); !ok || got != j {
				t.Fatalf("seed %d: Lookup(%q) = %d, %v; want %d", seed, ref.String(), got, ok, j)
			}
		}
		for range 500 {
			ref := randomRef(rng)
			j, ok := p.Lookup([]byte(ref.String()))
			if want, named := jobOf[ref]; ok != named || ok && j != want {
				t.Fatalf("seed %d: Lookup(%q) = %d, %v; want %d, %v", seed, ref.String(), j, ok, want, named)
			}
		}
	}
}

// TestPlanLookupNames: Lookup takes only a whole "<type>/<id>".
func TestPlanLookupNames(t *testing.T) {
	p := NewPlan(health.Upstreams("/apisix/upstreams/a", "/routes/a.b"))
	for name, want := range map[string]int{
		"upstreams/a": 0, "routes/a.b": 1,
		"upstreams/": -1, "upstreams/ab": -1, "upstreamsa": -1, "upstreams/a/": -1, "/upstreams/a": -1,
		"routes/a": -1, "routes": -1, "": -1, "apisix/upstreams/a": -1, "upstreams/A": -1,
	} {
		j, ok := p.Lookup([]byte(name))
		if !ok {
			j = -1
		}
		if j != want {
			t.Errorf("Lookup(%q) = %d, want %d", name, j, want)
		}
	}
	if j, ok := NewPlan(nil).Lookup([]byte("upstreams/a")); ok {
		t.Errorf("an empty plan finds resource %d", j)
	}
}

// randomUpstreams returns n keys over a few resources, some under several
// prefixes, some repeated, some naming no resource.
func randomUpstreams(rng *rand.Rand, n int) []health.Upstream {
	ups := make([]health.Upstream, n)
	for i := range ups {
		switch ref := randomRef(rng); rng.IntN(10) {
		case 0: // no resource
			ups[i] = health.Upstream{Key: "/apisix/" + ref.Type + "/"}
		case 1: // a repeated key
			if i > 0 {
				ups[i] = ups[rng.IntN(i)]
				continue
			}
			fallthrough
		default:
			ups[i] = health.Upstream{Key: fmt.Sprintf("/p%d/%s", rng.IntN(3), ref)}
		}
	}
	return ups
}

// randomRef draws from a small set of resources, a few invalid.
func randomRef(rng *rand.Rand) Ref {
	types := []string{"upstreams", "routes", "services", "stream_routes", "upstream", ""}
	ids := []string{"a", "b", "1", "a.b", "..", "", "x y", "api-1", "API-1"}
	id := ids[rng.IntN(len(ids))]
	if rng.IntN(2) == 0 {
		id += fmt.Sprint(rng.IntN(40))
	}
	return Ref{Type: types[rng.IntN(len(types))], ID: id}
}
