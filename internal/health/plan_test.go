package health

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPlanAgainstMap holds a Plan to the maps a poll used to build: the
// same distinct resources in the order of their first key, each key's
// resource, invalid refs left out, and Lookup finding exactly the
// resources the keys name, on random keys that repeat resources under
// other prefixes and hold refs built by hand (invalid, or not the key's).
func TestPlanAgainstMap(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		ups := randomUpstreams(rng, rng.IntN(300))
		p := NewPlan(ups)

		jobOf := map[Ref]int{}
		var refs []Ref
		for i, u := range ups {
			j, ok := p.KeyResource(i)
			if u.Ref.Check() != nil {
				if ok {
					t.Fatalf("seed %d: key %d (%v) is invalid, plan gives resource %d", seed, i, u.Ref, j)
				}
				continue
			}
			want, seen := jobOf[u.Ref]
			if !seen {
				want = len(refs)
				jobOf[u.Ref] = want
				refs = append(refs, u.Ref)
			}
			if !ok || j != want {
				t.Fatalf("seed %d: key %d (%v): resource %d, %v; want %d", seed, i, u.Ref, j, ok, want)
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
	p := NewPlan(MustUpstreams("/apisix/upstreams/a", "/routes/a.b"))
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
// prefixes, some repeated, some with a Ref built by hand.
func randomUpstreams(rng *rand.Rand, n int) []Upstream {
	ups := make([]Upstream, n)
	for i := range ups {
		switch ref := randomRef(rng); rng.IntN(10) {
		case 0: // built by hand: the key says something else
			ups[i] = Upstream{Key: "/apisix/upstreams/other", Ref: ref}
		case 1: // a repeated key
			if i > 0 {
				ups[i] = ups[rng.IntN(i)]
				continue
			}
			fallthrough
		default:
			ups[i] = Upstream{Key: fmt.Sprintf("/p%d/%s", rng.IntN(3), ref), Ref: ref}
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
