package vip

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

const degIface = "rhi1"

func newPair(t *testing.T) (*fakeKernel, *Ladder) {
	t.Helper()
	f := newFakeKernel()
	f.addLink(iface)
	f.addLink(degIface)
	log, _ := test.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	return f, &Ladder{Main: New(f, iface, log), Degraded: New(f, degIface, log)}
}

func places(kv ...any) []Placed {
	var want []Placed
	for i := 0; i+1 < len(kv); i += 2 {
		want = append(want, Placed{netip.MustParsePrefix(kv[i].(string)), kv[i+1].(Place)})
	}
	slices.SortFunc(want, func(a, b Placed) int { return a.Prefix.Compare(b.Prefix) })
	return want
}

func has(f *fakeKernel, link, p string) bool {
	_, ok := f.links[link].addrs[netip.MustParsePrefix(p)]
	return ok
}

// TestMoveSetAddsBeforeDeletes: a move either way adds the VIP to the new
// interface before deleting it from the old one, and a tick that moves
// nothing writes nothing.
func TestMoveSetAddsBeforeDeletes(t *testing.T) {
	f, p := newPair(t)
	ctx := context.Background()
	const v = "10.0.0.1/32"
	steps := []struct {
		place Place
		trace []string
	}{
		{Main, []string{"rhi0 add " + v}},
		{Main, nil},
		{Degraded, []string{"rhi1 add " + v, "rhi0 del " + v}},
		{Degraded, nil},
		{Main, []string{"rhi0 add " + v, "rhi1 del " + v}},
		{Degraded, []string{"rhi1 add " + v, "rhi0 del " + v}},
		{Off, []string{"rhi1 del " + v}},
		{Degraded, []string{"rhi1 add " + v}},
	}
	for i, s := range steps {
		f.trace = nil
		mv := p.MoveSet(ctx, places(v, s.place))
		errM, errD := mv.Err[0], mv.Err[1]
		if errM != nil || errD != nil {
			t.Fatalf("step %d: %v / %v", i, errM, errD)
		}
		if diff := cmpDiff(s.trace, f.trace); diff != "" {
			t.Errorf("step %d (to %v): trace (-want +got):\n%s", i, s.place, diff)
		}
		onMain, onDeg := has(f, iface, v), has(f, degIface, v)
		if onMain != (s.place == Main) || onDeg != (s.place == Degraded) {
			t.Errorf("step %d: on rhi0 %v, on rhi1 %v, want place %v", i, onMain, onDeg, s.place)
		}
	}
}

// TestMoveSetNeverLeavesAGap: after every single write of a move, the VIP
// is on at least one interface.
func TestMoveSetNeverLeavesAGap(t *testing.T) {
	f, p := newPair(t)
	ctx := context.Background()
	const v = "10.0.0.1/32"
	p.MoveSet(ctx, places(v, Main))
	gap := false
	f.beforeWrite = func(op string, q netip.Prefix) {
		if op == "del" && !(has(f, iface, v) && has(f, degIface, v)) {
			gap = true // deleting the only copy
		}
	}
	for _, pl := range []Place{Degraded, Main, Degraded, Main} {
		p.MoveSet(ctx, places(v, pl))
	}
	if gap {
		t.Errorf("a delete removed the only copy of the VIP; trace %v", f.trace)
	}
}

// TestMoveSetKeepsOldCopyWhenAddFails: a VIP whose add to the degraded
// interface fails stays on main; once the add works it moves.
func TestMoveSetKeepsOldCopyWhenAddFails(t *testing.T) {
	f, p := newPair(t)
	ctx := context.Background()
	const v = "10.0.0.1/32"
	p.MoveSet(ctx, places(v, Main))
	f.failAdd = map[netip.Prefix]error{netip.MustParsePrefix(v): errTest}
	mv := p.MoveSet(ctx, places(v, Degraded))
	errM, errD := mv.Err[0], mv.Err[1]
	if errM != nil || errD == nil {
		t.Fatalf("errors %v / %v, want only the degraded one", errM, errD)
	}
	if !has(f, iface, v) || has(f, degIface, v) {
		t.Fatalf("after a failed add: rhi0 %v rhi1 %v, want it kept on rhi0", has(f, iface, v), has(f, degIface, v))
	}
	f.failAdd = nil
	p.MoveSet(ctx, places(v, Degraded))
	if has(f, iface, v) || !has(f, degIface, v) {
		t.Fatalf("after the retry: rhi0 %v rhi1 %v, want it on rhi1 only", has(f, iface, v), has(f, degIface, v))
	}
}

// TestMoveSetWithoutDegradedInterface: without the degraded interface a
// degraded VIP is announced at full weight, and VIPs at full weight are
// set as without the tier.
func TestMoveSetWithoutDegradedInterface(t *testing.T) {
	f, p := newPair(t)
	delete(f.links, degIface)
	mv := p.MoveSet(context.Background(), places("10.0.0.1/32", Degraded, "10.0.0.2/32", Main, "10.0.0.3/32", Off))
	main, errM, errD := mv.State[0], mv.Err[0], mv.Err[1]
	if errM != nil || !errorsIsNoIface(errD) {
		t.Fatalf("errors %v / %v", errM, errD)
	}
	if diff := cmpDiff(prefixes("10.0.0.1/32", "10.0.0.2/32"), main.Present); diff != "" {
		t.Errorf("main (-want +got):\n%s", diff)
	}
}

var errTest = errors.New("injected failure")

func errorsIsNoIface(err error) bool { return errors.Is(err, ErrNoInterface) }

// TestMoveSetDryRun: dry-run announcers on both interfaces write nothing
// and log the add to rhi1 a degrading move would make.
func TestMoveSetDryRun(t *testing.T) {
	f := newFakeKernel()
	f.addLink(iface, "10.0.0.1/32")
	f.addLink(degIface)
	log, hook := test.NewNullLogger()
	p := &Ladder{Main: NewDryRun(f, iface, log), Degraded: NewDryRun(f, degIface, log)}
	p.Last[0] = State{Exists: true, Up: true, Present: prefixes("10.0.0.1/32")}
	if mv := p.MoveSet(context.Background(), places("10.0.0.1/32", Degraded)); mv.Err[0] != nil || mv.Err[1] != nil {
		errM, errD := mv.Err[0], mv.Err[1]
		t.Fatalf("%v / %v", errM, errD)
	}
	if f.writes != 0 {
		t.Errorf("dry run wrote %d times: %v", f.writes, f.trace)
	}
	found := false
	for _, e := range hook.AllEntries() {
		if e.Data["iface"] == degIface && e.Data["would_add"] == "10.0.0.1/32" {
			found = true
		}
	}
	if !found {
		t.Errorf("no dry-run line about adding to %s: %v", degIface, logged(hook))
	}
}

// flakySetter fails its next fails calls without reading the interface, as
// a netlink dump that times out does, then passes them on.
type flakySetter struct {
	Setter
	fails int
}

func (f *flakySetter) Set(ctx context.Context, want Desired) (State, error) {
	if f.fails > 0 {
		f.fails--
		return State{}, errTest
	}
	return f.Setter.Set(ctx, want)
}

// TestMoveSetUnreadDegradedKeepsCopy: a VIP moving up whose add to main
// fails stays on the degraded interface, even when the first Set of the
// degraded interface could not read it: an interface not read says
// nothing about what it holds, so the third step must not delete the
// only copy.
func TestMoveSetUnreadDegradedKeepsCopy(t *testing.T) {
	f, p := newPair(t)
	ctx := context.Background()
	const v = "10.0.0.1/32"
	p.MoveSet(ctx, places(v, Degraded))
	if !has(f, degIface, v) {
		t.Fatal("setup: not on rhi1")
	}
	flaky := &flakySetter{Setter: p.Degraded, fails: 1}
	p.Degraded = flaky
	f.failAdd = map[netip.Prefix]error{netip.MustParsePrefix(v): errTest}
	p.MoveSet(ctx, places(v, Main))
	if !has(f, iface, v) && !has(f, degIface, v) {
		t.Fatalf("the VIP is on neither interface; trace %v", f.trace)
	}
	f.failAdd = nil
	p.MoveSet(ctx, places(v, Main))
	if !has(f, iface, v) || has(f, degIface, v) {
		t.Errorf("after the retry: rhi0 %v rhi1 %v, want rhi0 only", has(f, iface, v), has(f, degIface, v))
	}
}

const lrIface = "rhi2"

func newLadder(t *testing.T) (*fakeKernel, *Ladder) {
	t.Helper()
	f, l := newPair(t)
	f.addLink(lrIface)
	log, _ := test.NewNullLogger()
	l.LastResort = New(f, lrIface, log)
	return f, l
}

// TestLadderEveryMove: every move between the four places, of one VIP,
// adds before it deletes, never deletes the only copy, ends with the VIP
// on exactly its interface, and a repeat writes nothing.
func TestLadderEveryMove(t *testing.T) {
	const v = "10.0.0.1/32"
	all := []Place{Off, Main, Degraded, LastResort}
	links := map[Place]string{Main: iface, Degraded: degIface, LastResort: lrIface}
	for _, from := range all {
		for _, to := range all {
			t.Run(fmt.Sprintf("%d to %d", from, to), func(t *testing.T) {
				f, l := newLadder(t)
				ctx := context.Background()
				l.MoveSet(ctx, places(v, from))
				gap := false
				f.beforeWrite = func(op string, _ netip.Prefix) {
					n := 0
					for _, name := range links {
						if has(f, name, v) {
							n++
						}
					}
					if op == "del" && n < 2 && to != Off {
						gap = true
					}
				}
				f.trace = nil
				mv := l.MoveSet(ctx, places(v, to))
				for r, err := range mv.Err {
					if err != nil {
						t.Fatalf("rung %d: %v", r, err)
					}
				}
				if gap {
					t.Errorf("a delete removed the only copy; trace %v", f.trace)
				}
				for pl, name := range links {
					if has(f, name, v) != (pl == to) {
						t.Errorf("on %s: %v; trace %v", name, has(f, name, v), f.trace)
					}
				}
				f.trace = nil
				l.MoveSet(ctx, places(v, to))
				if len(f.trace) != 0 {
					t.Errorf("a repeat wrote %v", f.trace)
				}
			})
		}
	}
}

// TestLadderReplay replays a list of placements of several VIPs in order
// and shuffled: after each, every VIP is exactly where it belongs.
func TestLadderReplay(t *testing.T) {
	vips := []string{"10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32"}
	steps := [][]Place{
		{Main, Main, Main}, {Degraded, Main, LastResort}, {LastResort, Degraded, Main},
		{Off, LastResort, Degraded}, {Main, Off, LastResort}, {LastResort, LastResort, LastResort}, {Off, Off, Off},
	}
	links := map[Place]string{Main: iface, Degraded: degIface, LastResort: lrIface}
	check := func(t *testing.T, order []int) {
		f, l := newLadder(t)
		for _, i := range order {
			var want []Placed // vips are sorted
			for j, v := range vips {
				want = append(want, Placed{netip.MustParsePrefix(v), steps[i][j]})
			}
			l.MoveSet(context.Background(), want)
			for j, v := range vips {
				for pl, name := range links {
					if has(f, name, v) != (pl == steps[i][j]) {
						t.Fatalf("step %d: %s on %s: %v, want place %d", i, v, name, has(f, name, v), steps[i][j])
					}
				}
			}
		}
	}
	order := []int{0, 1, 2, 3, 4, 5, 6}
	check(t, order)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		check(t, order)
	}
}

// TestLadderWithoutLastResortInterface: a VIP that should go to last
// resort while its interface is missing stays where it is.
func TestLadderWithoutLastResortInterface(t *testing.T) {
	f, l := newLadder(t)
	const v = "10.0.0.1/32"
	ctx := context.Background()
	l.MoveSet(ctx, places(v, Degraded))
	delete(f.links, lrIface)
	mv := l.MoveSet(ctx, places(v, LastResort))
	if !errorsIsNoIface(mv.Err[2]) || mv.Err[0] != nil || mv.Err[1] != nil {
		t.Fatalf("errors %v", mv.Err)
	}
	if !has(f, degIface, v) || has(f, iface, v) {
		t.Errorf("rhi0 %v rhi1 %v: want it kept on rhi1", has(f, iface, v), has(f, degIface, v))
	}
}
