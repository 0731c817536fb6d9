package vip

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"
	"golang.org/x/sys/unix"
)

// twin runs the same Sets on two Announcers over two fakes that start
// alike and are changed alike: fast may skip its plan, full never does.
// Every Set must come out the same from both: State, errors, writes,
// logs, and what each remembers.
type twin struct {
	kfast, kfull *fakeKernel
	fast, full   *Announcer
	hfast, hfull *logtest.Hook
}

func newTwin(t *testing.T, addrs ...string) *twin {
	t.Helper()
	w := &twin{}
	w.kfast, w.fast, w.hfast = newTest(t, addrs...)
	w.kfull, w.full, w.hfull = newTest(t, addrs...)
	w.full.fullOnly = true
	return w
}

// both changes both fakes alike: someone else at work on the interface.
func (w *twin) both(change func(f *fakeKernel, l *fakeLink)) {
	change(w.kfast, w.kfast.links[iface])
	change(w.kfull, w.kfull.links[iface])
}

// set calls Set on both with owned, fails the test on any difference, and
// reports whether fast skipped its plan.
func (w *twin) set(t *testing.T, owned map[netip.Prefix]bool) (State, error, bool) {
	t.Helper()
	skipped := w.fast.skipped
	stFast, errFast := w.fast.Set(context.Background(), DesiredOf(owned))
	stFull, errFull := w.full.Set(context.Background(), DesiredOf(owned))
	w.compare(t, "Set", stFast, stFull, errFast, errFull)
	return stFast, errFast, w.fast.skipped > skipped
}

// renew calls Renew on both, as set does Set.
func (w *twin) renew(t *testing.T, p netip.Prefix, present bool) {
	t.Helper()
	errFast := w.fast.Renew(context.Background(), p, present)
	errFull := w.full.Renew(context.Background(), p, present)
	w.compare(t, "Renew", State{}, State{}, errFast, errFull)
}

func (w *twin) compare(t *testing.T, call string, stFast, stFull State, errFast, errFull error) {
	t.Helper()
	// The States, slices and maps are checked with reflect.DeepEqual or
	// == first; cmp, many times slower, then gives its verdict and the
	// diff of a difference.
	if !reflect.DeepEqual(stFull, stFast) {
		if d := cmpDiff(stFull, stFast); d != "" {
			t.Fatalf("%s: State (-full +fast):\n%s", call, d)
		}
	}
	if f, g := errLines(errFull), errLines(errFast); f != g {
		t.Fatalf("%s: error:\nfull: %s\nfast: %s", call, f, g)
	}
	if f, g := w.kfull.String(), w.kfast.String(); f != g {
		t.Fatalf("%s: interface:\nfull:\n%s\nfast:\n%s", call, f, g)
	}
	if f, g := w.kfull.ops, w.kfast.ops; !sameSlice(f, g) {
		t.Fatalf("%s: writes (-full +fast):\n%s", call, cmpDiff(f, g))
	}
	if f, g := allLogged(w.hfull), allLogged(w.hfast); !sameSlice(f, g) {
		t.Fatalf("%s: logs (-full +fast):\n%s", call, cmpDiff(f, g))
	}
	if f, g := remembered(w.full), remembered(w.fast); !maps.Equal(f, g) {
		t.Fatalf("%s: reached (-full +fast):\n%s", call, cmpDiff(f, g))
	}
	if f, g := w.full.present, w.fast.present; !sameSlice(f, g) {
		t.Fatalf("%s: present (-full +fast):\n%s", call, cmpDiff(f, g))
	}
	w.hfast.Reset()
	w.hfull.Reset()
}

// sameSlice is cmp.Equal for slices of comparable values: the same
// elements, and nil only if the other is nil.
func sameSlice[E comparable](x, y []E) bool {
	return slices.Equal(x, y) && (x == nil) == (y == nil)
}

// remembered is what a.reached says, built or not.
func remembered(a *Announcer) map[netip.Prefix]bool {
	if a.reached != nil {
		return maps.Clone(a.reached)
	}
	m := map[netip.Prefix]bool{}
	for _, p := range a.present {
		m[p] = true
	}
	for _, p := range a.absent {
		m[p] = false
	}
	return m
}

// errLines is err's lines, sorted (plan lists some errors in map order).
func errLines(err error) string {
	if err == nil {
		return "<nil>"
	}
	lines := strings.Split(err.Error(), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// allLogged is every entry, Debug too, with all its fields, sorted.
func allLogged(h *logtest.Hook) []string {
	var out []string
	for _, e := range h.AllEntries() {
		out = append(out, fmt.Sprintf("%s %s %v", e.Level, e.Message, e.Data))
	}
	slices.Sort(out)
	return out
}

// TestSetSkipsPlanWhenNothingChanged plays sequences of ticks and says of
// each Set whether it skips its plan; a twin that always plans checks that
// each comes out the same (twin.set). Long because it is one table.
func TestSetSkipsPlanWhenNothingChanged(t *testing.T) {
	type step struct {
		name    string
		change  func(t *testing.T, w *twin) // before the Set; nil: none
		owned   map[netip.Prefix]bool       // nil: as before
		skip    bool                        // the Set skips its plan
		errText string                      // in its error; "": no error
		check   func(t *testing.T, w *twin, st State)
	}
	add := func(p string) func(_ *testing.T, w *twin) {
		return func(_ *testing.T, w *twin) {
			w.both(func(_ *fakeKernel, l *fakeLink) { l.addrs[pfx(p)] = fakeAddr{} })
		}
	}
	del := func(p string) func(_ *testing.T, w *twin) {
		return func(_ *testing.T, w *twin) { w.both(func(_ *fakeKernel, l *fakeLink) { delete(l.addrs, pfx(p)) }) }
	}
	holds := func(lines ...string) func(t *testing.T, w *twin, st State) {
		return func(t *testing.T, w *twin, _ State) {
			t.Helper()
			if got, want := w.kfast.String(), want(lines...); got != want {
				t.Errorf("interface:\n%s\nwant:\n%s", got, want)
			}
		}
	}
	base := owned("10.0.0.1/32", "10.0.0.2/32", "-10.0.0.3/32", "2001:db8::1/128")
	tests := []struct {
		name  string
		addrs []string
		steps []step
	}{
		{"steady", nil, []step{
			{name: "first", owned: base},
			{name: "settled: the first wrote"},
			{name: "same", skip: true, check: holds("10.0.0.1/32", "10.0.0.2/32", "2001:db8::1/128 nodad")},
			{name: "same again", skip: true},
		}},
		{"someone else adds or deletes", nil, []step{
			{name: "first", owned: base},
			{name: "settled: the first wrote"},
			{name: "armed", skip: true},
			{name: "owned deleted", change: del("10.0.0.1/32"), check: holds("10.0.0.1/32", "10.0.0.2/32", "2001:db8::1/128 nodad")},
			{name: "re-armed only now: that Set wrote"},
			{name: "steady", skip: true},
			{name: "unwanted added", change: add("10.0.0.3/32"), check: holds("10.0.0.1/32", "10.0.0.2/32", "2001:db8::1/128 nodad")},
			{name: "after the repair"},
			{name: "steady again", skip: true},
			{name: "unowned added", change: add("10.0.0.9/32"), check: func(t *testing.T, _ *twin, st State) {
				if !slices.Equal(st.Foreign, prefixes("10.0.0.9/32")) {
					t.Errorf("Foreign = %v", st.Foreign)
				}
			}},
			{name: "foreign: never armed", check: func(t *testing.T, _ *twin, st State) {
				if !slices.Equal(st.Foreign, prefixes("10.0.0.9/32")) {
					t.Errorf("Foreign = %v", st.Foreign)
				}
			}},
			{name: "gone", change: del("10.0.0.9/32")},
			{name: "armed again", skip: true},
		}},
		{"someone else deletes the last of the dump, or the first", nil, []step{
			{name: "first", owned: base},
			{name: "settled: the first wrote"},
			{name: "armed", skip: true},
			{name: "last deleted", change: del("2001:db8::1/128"), check: holds("10.0.0.1/32", "10.0.0.2/32", "2001:db8::1/128 nodad")},
			{name: "after the repair"},
			{name: "armed again", skip: true},
			{name: "reversed, first deleted", change: func(t *testing.T, w *twin) {
				w.both(func(f *fakeKernel, l *fakeLink) { f.reversed = true })
				del("2001:db8::1/128")(t, w)
			}, check: holds("10.0.0.1/32", "10.0.0.2/32", "2001:db8::1/128 nodad")},
		}},
		{"someone else undoes the writes", []string{"10.0.0.2/32", "2001:db8::1/128"}, []step{
			{name: "adds 10.0.0.1", owned: base, check: holds("10.0.0.1/32", "10.0.0.2/32", "2001:db8::1/128")},
			{name: "the dump as before the add", change: del("10.0.0.1/32"), check: holds("10.0.0.1/32", "10.0.0.2/32", "2001:db8::1/128")},
			{name: "settled"},
			{name: "armed", skip: true},
		}},
		{"owned changes", nil, []step{
			{name: "first", owned: base},
			{name: "settled: the first wrote"},
			{name: "armed", skip: true},
			{name: "a copy, same content", owned: owned("10.0.0.1/32", "10.0.0.2/32", "-10.0.0.3/32", "2001:db8::1/128"), skip: true},
			{name: "one turns unwanted", owned: owned("10.0.0.1/32", "-10.0.0.2/32", "-10.0.0.3/32", "2001:db8::1/128"), check: holds("10.0.0.1/32", "2001:db8::1/128 nodad")},
			{name: "after the write"},
			{name: "armed", skip: true},
			{name: "one no longer owned, absent", owned: owned("10.0.0.1/32", "-10.0.0.2/32", "2001:db8::1/128")},
			{name: "armed with fewer", skip: true},
			{name: "one more owned, unwanted and absent", owned: owned("10.0.0.1/32", "-10.0.0.2/32", "-10.0.0.4/32", "2001:db8::1/128")},
			{name: "armed with more", skip: true},
		}},
		{"a failed write", nil, []step{
			{name: "add refused", change: func(_ *testing.T, w *twin) {
				w.both(func(f *fakeKernel, _ *fakeLink) { f.failAdd = map[netip.Prefix]error{pfx("10.0.0.2/32"): unix.EPERM} })
			}, owned: base, errText: `vip "10.0.0.2/32": add on "rhi0"`},
			{name: "tried again", errText: `vip "10.0.0.2/32": add on "rhi0"`},
			{name: "allowed", change: func(_ *testing.T, w *twin) { w.both(func(f *fakeKernel, _ *fakeLink) { f.failAdd = nil }) }, check: holds("10.0.0.1/32", "10.0.0.2/32", "2001:db8::1/128 nodad")},
			{name: "after the write"},
			{name: "armed", skip: true},
		}},
		{"an error with nothing to write", nil, []step{
			{name: "first", owned: owned("10.0.0.1/32", "10.1.0.0/24"), errText: "not a /32 or /128"},
			{name: "every tick", errText: "not a /32 or /128"},
		}},
		{"IPv6 address taken", []string{"2001:db8::5/64"}, []step{
			{name: "first", owned: owned("10.0.0.1/32", "2001:db8::5/128"), errText: "already there"},
			{name: "every tick", errText: "already there"},
		}},
		{"point-to-point entry", []string{"10.9.0.1 peer 10.9.0.2/32"}, []step{
			{name: "first", owned: owned("10.0.0.1/32")},
			{name: "never armed", check: func(t *testing.T, _ *twin, st State) {
				if len(st.ForeignPeers) != 1 {
					t.Errorf("ForeignPeers = %v", st.ForeignPeers)
				}
			}},
			{name: "still not"},
		}},
		{"the dump in another order", nil, []step{
			{name: "first", owned: base},
			{name: "settled: the first wrote"},
			{name: "armed", skip: true},
			{name: "reversed", change: func(_ *testing.T, w *twin) { w.both(func(f *fakeKernel, _ *fakeLink) { f.reversed = true }) }},
			{name: "armed on the new order", skip: true},
		}},
		{"renewed", nil, []step{
			{name: "first", owned: base},
			{name: "settled: the first wrote"},
			{name: "armed", skip: true},
			{name: "after a renewal", change: func(t *testing.T, w *twin) { w.renew(t, pfx("10.0.0.1/32"), true) }},
			{name: "armed again", skip: true},
		}},
		{"interface gone and back", nil, []step{
			{name: "first", owned: base},
			{name: "settled: the first wrote"},
			{name: "armed", skip: true},
			{name: "gone", change: func(_ *testing.T, w *twin) {
				w.both(func(f *fakeKernel, l *fakeLink) { delete(f.links, iface) })
			}, errText: "no such interface"},
			{name: "back, as it was", change: func(_ *testing.T, w *twin) {
				w.both(func(f *fakeKernel, _ *fakeLink) {
					f.addLink(iface, "10.0.0.1/32", "10.0.0.2/32", "2001:db8::1/128")
				})
			}},
			{name: "armed", skip: true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newTwin(t, tc.addrs...)
			var own map[netip.Prefix]bool
			for _, s := range tc.steps {
				if s.change != nil {
					s.change(t, w)
				}
				if s.owned != nil {
					own = s.owned
				}
				st, err, skipped := w.set(t, own)
				if skipped != s.skip {
					t.Errorf("%s: skipped the plan: %v, want %v", s.name, skipped, s.skip)
				}
				if s.errText == "" && err != nil || s.errText != "" && (err == nil || !strings.Contains(err.Error(), s.errText)) {
					t.Errorf("%s: error %v, want one with %q", s.name, err, s.errText)
				}
				if s.check != nil {
					s.check(t, w, st)
				}
			}
		})
	}
}

// TestSetSkipsPlanRandomly plays random sequences of ticks on a twin:
// mostly nothing new, sometimes someone else adding or deleting an address
// (a VIP, a foreign one, a point-to-point entry, an IPv6 address with
// another length), the owned set changing, writes refused or unanswered,
// interrupted dumps, the dump's order changing, renewals. Every Set must
// come out of the Announcer that may skip its plan as out of the one that
// always plans, and enough Sets must skip for that to mean something.
func TestSetSkipsPlanRandomly(t *testing.T) {
	var vips, others []netip.Prefix
	for i := 1; i <= 8; i++ {
		vips = append(vips, pfx(fmt.Sprintf("10.0.0.%d/32", i)))
	}
	vips = append(vips, pfx("2001:db8::1/128"), pfx("2001:db8::2/128"), pfx("2001:db8::3/128"))
	others = append(others, pfx("10.0.0.200/24"), pfx("2001:db8::2/64"), pfx("10.0.0.9/32"))
	nonHost := pfx("10.1.0.0/24")
	peer := Peer{Local: netip.MustParseAddr("10.0.0.1"), Peer: pfx("10.9.9.9/32")}
	sets, skips := 0, 0
	for seed := range uint64(40) { // 150 were run once: the same breaches fail at 40
		rng := rand.New(rand.NewPCG(seed, 15))
		w := newTwin(t)
		own := map[netip.Prefix]bool{}
		for _, p := range vips[:rng.IntN(len(vips))] {
			own[p] = rng.IntN(3) > 0
		}
		for range 80 {
			tickChange(t, rng, w, own, vips, others, nonHost, peer)
			before := maps.Clone(w.kfast.links[iface].addrs)
			w.set(t, own)
			if rng.IntN(8) == 0 { // someone else undoes what that Set wrote
				w.both(func(_ *fakeKernel, l *fakeLink) { l.addrs = maps.Clone(before) })
			}
			w.both(func(f *fakeKernel, _ *fakeLink) { f.loseAcks, f.interrupted = 0, 0 })
			sets++
		}
		skips += w.fast.skipped
		if w.full.skipped != 0 {
			t.Fatalf("seed %d: the full twin skipped %d plans", seed, w.full.skipped)
		}
	}
	t.Logf("%d of %d Sets skipped their plan", skips, sets)
	if skips < sets/10 {
		t.Errorf("only %d of %d Sets skipped their plan: the test shows little", skips, sets)
	}
}

// tickChange makes, more often than not, no change at all; else one
// random change, to both fakes of w or to own.
func tickChange(t *testing.T, rng *rand.Rand, w *twin, own map[netip.Prefix]bool, vips, others []netip.Prefix, nonHost netip.Prefix, peer Peer) {
	anyOf := func(ps []netip.Prefix) netip.Prefix { return ps[rng.IntN(len(ps))] }
	switch rng.IntN(40) {
	case 0, 1: // someone else adds an address
		p := anyOf(append(slices.Clone(vips), others...))
		w.both(func(f *fakeKernel, l *fakeLink) { _ = f.add(l, p) })
	case 2, 3: // someone else deletes one
		p := anyOf(append(slices.Clone(vips), others...))
		w.both(func(_ *fakeKernel, l *fakeLink) { delete(l.addrs, p) })
	case 4:
		w.both(func(_ *fakeKernel, l *fakeLink) { l.peers[peer] = fakeAddr{} })
	case 5:
		w.both(func(_ *fakeKernel, l *fakeLink) { delete(l.peers, peer) })
	case 6, 7:
		p := anyOf(vips)
		own[p] = !own[p]
	case 8:
		delete(own, anyOf(vips))
	case 9:
		if _, ok := own[nonHost]; ok {
			delete(own, nonHost)
		} else {
			own[nonHost] = true
		}
	case 10:
		p, e := anyOf(vips), error(unix.EPERM)
		if rng.IntN(2) == 0 {
			e = nil
		}
		w.both(func(f *fakeKernel, _ *fakeLink) {
			f.failAdd = map[netip.Prefix]error{p: e}
			f.failDel = map[netip.Prefix]error{anyOf(vips[:1]): e}
		})
	case 11:
		n := 1 + rng.IntN(3)
		w.both(func(f *fakeKernel, _ *fakeLink) { f.loseAcks = n })
	case 12:
		n := 1 + rng.IntN(maxReads)
		w.both(func(f *fakeKernel, _ *fakeLink) { f.interrupted = n })
	case 13:
		w.both(func(f *fakeKernel, _ *fakeLink) { f.reversed = !f.reversed })
	case 14:
		p := anyOf(vips)
		_, have := w.kfast.links[iface].addrs[p]
		w.renew(t, p, have)
	case 15, 16: // the operator cleans up
		delete(own, nonHost)
		w.both(func(f *fakeKernel, l *fakeLink) {
			f.failAdd, f.failDel = nil, nil
			clear(l.peers)
			for _, p := range others {
				delete(l.addrs, p)
			}
		})
	}
}
