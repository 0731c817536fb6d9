package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// fakeHealth answers every poll with the verdicts set for each key; a key
// with no verdict is Failed, like an API that does not answer.
type fakeHealth struct {
	mu       sync.Mutex
	verdicts map[string]health.Verdict
	polls    int
	polled   chan struct{} // receives after every poll, if not nil
}

func newFakeHealth() *fakeHealth { return &fakeHealth{verdicts: map[string]health.Verdict{}} }

func (f *fakeHealth) set(v health.Verdict, keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		f.verdicts[k] = v
	}
}

// down makes every key unreadable, as when the control API is down.
func (f *fakeHealth) down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.verdicts)
}

func (f *fakeHealth) Poll(ctx context.Context, ups []health.Upstream) health.Snapshot {
	f.mu.Lock()
	snap := health.Snapshot{}
	for _, u := range ups {
		k := u.Key
		v, ok := f.verdicts[k]
		if !ok {
			snap[k] = health.Result{Verdict: health.Failed, Err: errors.New("connection refused")}
			continue
		}
		snap[k] = health.Result{Verdict: v, Healthy: 1, Total: 1}
	}
	f.polls++
	ch := f.polled
	f.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		case <-ctx.Done():
		}
	}
	return snap
}

// fakeLink behaves like the kernel for one interface: adding an address that
// is there or deleting one that is not is an error.
type fakeLink struct {
	mu      sync.Mutex
	exists  bool
	down    bool
	addrs   map[netip.Prefix]bool
	writes  int
	renewed []string
	onRenew func(netip.Prefix)
	failAdd map[netip.Prefix]bool
	failDel map[netip.Prefix]bool
	peers   []vip.Peer // point-to-point entries, foreign by nature
	// observeErrs fail the next Observe calls, one each, as a netlink
	// read that times out would.
	observeErrs []error
	// sets, if not nil, receives after every Set.
	sets chan struct{}
}

func newFakeLink(present ...string) *fakeLink {
	l := &fakeLink{exists: true, addrs: map[netip.Prefix]bool{}, failAdd: map[netip.Prefix]bool{}, failDel: map[netip.Prefix]bool{}}
	for _, p := range present {
		l.addrs[netip.MustParsePrefix(p)] = true
	}
	return l
}

// state is the link as Set reports it for want (nil: every address is
// rhi's, as Observe reports it).
func (l *fakeLink) state(want *vip.Desired) vip.State {
	st := vip.State{Exists: l.exists, Up: l.exists && !l.down, ForeignPeers: l.peers}
	for p := range l.addrs {
		mine := want == nil
		if !mine {
			_, mine = want.Want(p)
		}
		if mine {
			st.Present = append(st.Present, p)
		} else {
			st.Foreign = append(st.Foreign, p)
		}
	}
	slices.SortFunc(st.Present, netip.Prefix.Compare)
	slices.SortFunc(st.Foreign, netip.Prefix.Compare)
	return st
}

func mapKeys(m map[netip.Prefix]bool) []netip.Prefix {
	var out []netip.Prefix
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (l *fakeLink) Observe(ctx context.Context) (vip.State, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.observeErrs) > 0 {
		err := l.observeErrs[0]
		l.observeErrs = l.observeErrs[1:]
		return vip.State{}, err
	}
	if !l.exists {
		return vip.State{}, fmt.Errorf("interface %q: %w", "rhi0", vip.ErrNoInterface)
	}
	return l.state(nil), nil
}

func (l *fakeLink) Set(ctx context.Context, want vip.Desired) (vip.State, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := checkDesired(want); err != nil {
		return vip.State{}, err
	}
	if !l.exists {
		return vip.State{}, fmt.Errorf("interface %q: %w", "rhi0", vip.ErrNoInterface)
	}
	var errs []error
	changed := 0
	for _, p := range want.Present { // adds first
		if !l.addrs[p] {
			l.writes++
			changed++
			if l.failAdd[p] {
				errs = append(errs, fmt.Errorf("vip %q: add: %w", p, syscall.EPERM))
				continue
			}
			l.addrs[p] = true
		}
	}
	for _, p := range want.Absent {
		if l.addrs[p] {
			l.writes++
			changed++
			if l.failDel[p] {
				errs = append(errs, fmt.Errorf("vip %q: delete: %w", p, syscall.EBUSY))
				continue
			}
			delete(l.addrs, p)
		}
	}
	st := l.state(&want)
	st.Changed = changed
	if l.sets != nil {
		l.sets <- struct{}{}
	}
	return st, errors.Join(errs...)
}

// checkDesired reports how want breaks vip.Desired's contract, as
// vip.Announcer's Set would refuse it: the daemon must hand Set sorted,
// disjoint lists.
func checkDesired(want vip.Desired) error {
	for _, l := range [][]netip.Prefix{want.Present, want.Absent} {
		for i := 1; i < len(l); i++ {
			if l[i-1].Compare(l[i]) >= 0 {
				return fmt.Errorf("desired list not sorted without repeats: %s before %s", l[i-1], l[i])
			}
		}
	}
	for _, p := range want.Absent {
		if w, _ := want.Want(p); w {
			return fmt.Errorf("vip %q desired both present and absent", p)
		}
	}
	return nil
}

func sortedKeys(m map[netip.Prefix]bool) []netip.Prefix {
	k := mapKeys(m)
	slices.SortFunc(k, netip.Prefix.Compare)
	return k
}

// text prints the link as sorted addresses, or "missing".
func (l *fakeLink) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.exists {
		return "missing"
	}
	var out []string
	for _, p := range sortedKeys(l.addrs) {
		out = append(out, p.Addr().String())
	}
	return strings.Join(out, " ")
}

func (l *fakeLink) writeCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes
}

func (l *fakeLink) do(f func(l *fakeLink)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l)
}

// clock is a fake clock that tests advance by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (l *fakeLink) Renew(ctx context.Context, p netip.Prefix, present bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.addrs[p] != present {
		return fmt.Errorf("vip %q: renew: the address is not as believed", p)
	}
	l.writes += 2
	l.renewed = append(l.renewed, p.String())
	if l.onRenew != nil {
		l.onRenew(p)
	}
	return nil
}

// fakeBird answers confirmations like BIRD watching the fake link: its
// table holds what the link holds, except for prefixes it missed, for which
// it keeps a stale belief until the address is renewed.
type fakeBird struct {
	mu     sync.Mutex
	missed map[netip.Prefix]bool // BIRD's stale belief: in its table or not
	// directDown: no direct protocol is up, so nothing is in the table.
	directDown bool
	err        error
	checks     int
}

func newFakeBird(l *fakeLink) *fakeBird {
	b := &fakeBird{missed: map[netip.Prefix]bool{}}
	l.onRenew = func(p netip.Prefix) {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.missed, p)
	}
	return b
}

func (b *fakeBird) Check(ctx context.Context, in router.Input) router.Report {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.checks++
	if b.err != nil {
		return router.Report{Err: b.err}
	}
	rep := router.Report{Protocols: []router.ProtocolState{{Name: "peer_4", State: "up", BGPState: "Established", Established: true}}}
	if b.directDown {
		rep.Problems = []string{"no direct protocol in BIRD imports ipv4 routes: IPv4 VIPs cannot be announced"}
	}
	for _, v := range in.VIPs {
		inTable := v.OnInterface && !b.directDown
		if stale, ok := b.missed[v.Prefix]; ok {
			inTable = stale
		}
		want := v.Expected == router.Present
		r := router.VIPReport{Prefix: v.Prefix, Expected: v.Expected, OnInterface: v.OnInterface, InTable: inTable,
			DirectUp: !b.directDown, Exported: map[string]bool{"peer_4": inTable}}
		r.Agrees = v.OnInterface == want && inTable == want
		if !r.Agrees {
			r.Problem = fmt.Sprintf("interface %v, bird table %v", v.OnInterface, inTable)
		}
		rep.VIPs = append(rep.VIPs, r)
	}
	return rep
}

// fakeTicker is a ticker the test fires by hand. Like a time.Ticker's, its
// channel holds one tick, and a tick that finds it full is dropped.
type fakeTicker struct{ c chan time.Time }

func newFakeTicker() *fakeTicker { return &fakeTicker{c: make(chan time.Time, 1)} }

func (f *fakeTicker) C() <-chan time.Time { return f.c }
func (f *fakeTicker) Reset(time.Duration) {}
func (f *fakeTicker) Stop()               {}

func (f *fakeTicker) fire() {
	select {
	case f.c <- time.Now():
	default:
	}
}

// busyTicker ticks whenever the loop looks: its channel is closed. It turns
// the loop as fast as it can go, without waiting for an interval.
type busyTicker struct{}

var busyC = func() chan time.Time { c := make(chan time.Time); close(c); return c }()

func (busyTicker) C() <-chan time.Time { return busyC }
func (busyTicker) Reset(time.Duration) {}
func (busyTicker) Stop()               {}

// busyPolls makes d's poll ticker (the one for every) a busyTicker; the
// others never fire.
func busyPolls(d *Daemon, every time.Duration) {
	d.env.newTicker = func(d time.Duration) ticker {
		if d == every {
			return busyTicker{}
		}
		return newFakeTicker()
	}
}
