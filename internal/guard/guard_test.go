package guard

import (
	"errors"
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

type answer struct {
	at    float64
	sites int
	err   error
}

// TestRun replays answers and checks the verdict after each, for
// min_other_sites 1 and hold 2s.
func TestRun(t *testing.T) {
	down := errors.New("bird down")
	for _, tc := range []struct {
		name    string
		answers []answer
		want    []Verdict
	}{
		{"nothing yet", nil, nil},
		{"two answers over hold", []answer{{0, 1, nil}, {1, 1, nil}, {2, 1, nil}}, []Verdict{Short, Short, Enough}},
		{"a single answer never completes hold", []answer{{0, 1, nil}}, []Verdict{Short}},
		// An answer taken again (the loop re-reading the last one) proves
		// nothing, however late it is read.
		{"the same answer again", []answer{{0, 1, nil}, {0, 1, nil}, {0, 1, nil}}, []Verdict{Short, Short, Short}},
		{"an older answer is ignored", []answer{{0, 1, nil}, {3, 1, nil}, {1, 0, nil}}, []Verdict{Short, Enough, Enough}},
		{"too few breaks the run", []answer{{0, 1, nil}, {1, 0, nil}, {2, 1, nil}, {3, 1, nil}, {4, 1, nil}}, []Verdict{Short, Short, Short, Short, Enough}},
		{"unknown breaks the run", []answer{{0, 2, nil}, {1, 0, down}, {2, 2, nil}, {4, 2, nil}}, []Verdict{Short, Unknown, Short, Enough}},
		{"enough stays enough", []answer{{0, 1, nil}, {5, 3, nil}, {6, 1, nil}}, []Verdict{Short, Enough, Enough}},
		{"enough lost at once", []answer{{0, 1, nil}, {5, 1, nil}, {6, 0, nil}}, []Verdict{Short, Enough, Short}},
		{"unknown after enough", []answer{{0, 1, nil}, {5, 1, nil}, {6, 0, down}}, []Verdict{Short, Enough, Unknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Run
			if got := r.Verdict(2*time.Second, time.Time{}); got != Unknown {
				t.Errorf("zero run: %v", got)
			}
			for i, a := range tc.answers {
				r = r.Take(1, at(a.at), a.sites, a.err)
				if got := r.Verdict(2*time.Second, time.Time{}); got != tc.want[i] {
					t.Errorf("after answer %d (%+v): %v, want %v (run %+v)", i, a, got, tc.want[i], r)
				}
			}
		})
	}
}

// TestRunAfterTheFailure: the run may start before the VIP's health
// failed, but two of its answers at least must come after the failure.
func TestRunAfterTheFailure(t *testing.T) {
	var r Run
	for _, s := range []float64{0, 1, 2, 3, 4} {
		r = r.Take(1, at(s), 1, nil)
	}
	hold := 2 * time.Second
	for _, tc := range []struct {
		fell float64
		want Verdict
	}{{2.5, Enough}, {3, Short}, {3.5, Short}, {4, Short}} {
		if got := r.Verdict(hold, at(tc.fell)); got != tc.want {
			t.Errorf("answers 0..4 s, health failed at %v s: %v, want %v", tc.fell, got, tc.want)
		}
	}
	r = r.Take(1, at(5), 1, nil)
	if got := r.Verdict(hold, at(3.5)); got != Enough {
		t.Errorf("a second answer after the failure: %v", got)
	}
	// A run that starts after the failure needs hold, as any run.
	var q Run
	q = q.Take(1, at(10), 1, nil)
	q = q.Take(1, at(11), 1, nil)
	if got := q.Verdict(hold, at(9)); got != Short {
		t.Errorf("a run of 1 s: %v", got)
	}
	q = q.Take(1, at(12), 1, nil)
	if got := q.Verdict(hold, at(9)); got != Enough {
		t.Errorf("a run of 2 s: %v", got)
	}
}

// TestViewOf: a VIP the view does not cover, one it could not read, and
// every VIP of a view that failed as a whole are unknown, never "nobody".
func TestViewOf(t *testing.T) {
	a, b, c := netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("10.0.0.2/32"), netip.MustParsePrefix("10.0.0.3/32")
	bad := errors.New("unparsable path")
	v := View{At: t0, Serving: map[netip.Prefix][]uint32{a: {7, 9}, c: {}}, Unknown: map[netip.Prefix]error{b: bad}}
	if n, err := v.Of(a); n != 2 || err != nil {
		t.Errorf("a: %d %v", n, err)
	}
	if n, err := v.Of(c); n != 0 || err != nil {
		t.Errorf("c (nobody): %d %v", n, err)
	}
	if _, err := v.Of(b); !errors.Is(err, bad) {
		t.Errorf("b: %v", err)
	}
	if _, err := v.Of(netip.MustParsePrefix("10.0.0.4/32")); !errors.Is(err, ErrNotAnswered) {
		t.Errorf("not asked: %v", err)
	}
	v.Err = errors.New("no ADD-PATH")
	if _, err := v.Of(a); err != v.Err {
		t.Errorf("whole view unknown: %v", err)
	}
}

// TestRunsTake: one view advances every VIP asked; a second view later
// completes hold for those still served.
func TestRunsTake(t *testing.T) {
	a, b := netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("10.0.0.2/32")
	var g Runs
	vips := []netip.Prefix{a, b}
	g.Take(1, &View{At: at(0), Serving: map[netip.Prefix][]uint32{a: {7}, b: {7}}}, vips)
	g.Take(1, &View{At: at(2), Serving: map[netip.Prefix][]uint32{a: {7}}, Unknown: map[netip.Prefix]error{b: errors.New("x")}}, vips)
	if got := g.Of(a).Verdict(2*time.Second, time.Time{}); got != Enough {
		t.Errorf("a: %v", got)
	}
	if got := g.Of(b).Verdict(2*time.Second, time.Time{}); got != Unknown {
		t.Errorf("b: %v", got)
	}
	g.Keep(func(p netip.Prefix) bool { return p == a })
	if g.Of(b).Last != (time.Time{}) {
		t.Errorf("b kept: %+v", g.Of(b))
	}
	g.Reset()
	if g.Of(a).Verdict(2*time.Second, time.Time{}) != Unknown {
		t.Errorf("a after reset: %+v", g.Of(a))
	}
}
