package vip

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rhi-daemon/rhi/internal/vip/rtnl"
)

const iface = "rhi0"

// cmpDiff is cmp.Diff that compares netip values with ==.
func cmpDiff(x, y any) string {
	return cmp.Diff(x, y, cmpopts.EquateComparable(netip.Prefix{}, netip.Addr{}))
}

func newTest(t *testing.T, addrs ...string) (*fakeKernel, *Announcer, *logtest.Hook) {
	t.Helper()
	f := newFakeKernel()
	f.addLink(iface, addrs...)
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	return f, New(f, iface, log), hook
}

// want builds the fake's expected text for an up rhi0 holding lines, each
// an address optionally followed by flags ("2001:db8::1/128 nodad").
func want(lines ...string) string {
	out := []string{iface + " up"}
	for _, l := range lines {
		out = append(out, iface+" "+l)
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// owned parses "10.0.0.1/32" as wanted and "-10.0.0.1/32" as owned but unwanted.
func owned(ss ...string) map[netip.Prefix]bool {
	m := map[netip.Prefix]bool{}
	for _, s := range ss {
		wanted := !strings.HasPrefix(s, "-")
		m[netip.MustParsePrefix(strings.TrimPrefix(s, "-"))] = wanted
	}
	return m
}

// logged returns "LEVEL message vip=… action=… reason=…" for each entry at
// Info or above, so tests can compare what operators see.
func logged(hook *logtest.Hook) []string {
	var out []string
	for _, e := range hook.AllEntries() {
		if e.Level > logrus.InfoLevel {
			continue
		}
		line := e.Level.String() + " " + e.Message
		for _, k := range []string{"vip", "action", "reason", "added", "deleted"} {
			if v, ok := e.Data[k]; ok {
				line += fmt.Sprintf(" %s=%v", k, v)
			}
		}
		out = append(out, line)
	}
	return out
}

func TestSetAddsBeforeDeletes(t *testing.T) {
	f, a, _ := newTest(t, "10.0.0.1/32", "2001:db8::1/128")
	st, err := a.Set(context.Background(), DesiredOf(owned("-10.0.0.1/32", "-2001:db8::1/128", "10.0.0.3/32", "10.0.0.2/32", "2001:db8::2/128")))
	if err != nil {
		t.Fatalf("Set: %v", err)
	}
	wantOps := []string{"add 10.0.0.2/32", "add 10.0.0.3/32", "add 2001:db8::2/128", "del 10.0.0.1/32", "del 2001:db8::1/128"}
	if diff := cmpDiff(wantOps, f.ops); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(want("10.0.0.2/32", "10.0.0.3/32", "2001:db8::2/128 nodad"), f.String()); diff != "" {
		t.Errorf("kernel (-want +got):\n%s", diff)
	}
	wantSt := State{Exists: true, Up: true, LowerUp: true, Present: prefixes("10.0.0.2/32", "10.0.0.3/32", "2001:db8::2/128"), Changed: 5}
	if diff := cmpDiff(wantSt, st); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

func TestSetTwiceWritesNothing(t *testing.T) {
	tests := []struct {
		name  string
		start []string
		owned map[netip.Prefix]bool
	}{
		{name: "empty", owned: nil},
		{name: "all wanted", owned: owned("10.0.0.1/32", "10.0.0.2/32", "2001:db8::1/128")},
		{name: "none wanted", start: []string{"10.0.0.1/32"}, owned: owned("-10.0.0.1/32", "-2001:db8::1/128")},
		{name: "mixed with foreign", start: []string{"10.0.0.100/24", "fe80::1/64", "10.9.9.9/32"}, owned: owned("10.0.0.100/32", "-10.0.0.1/32", "2001:db8::1/128")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, a, _ := newTest(t, tt.start...)
			first, err := a.Set(context.Background(), DesiredOf(tt.owned))
			if err != nil {
				t.Fatalf("first Set: %v", err)
			}
			before, writes := f.String(), f.writes
			second, err := a.Set(context.Background(), DesiredOf(tt.owned))
			if err != nil {
				t.Fatalf("second Set: %v", err)
			}
			if got := f.writes - writes; got != 0 {
				t.Errorf("second Set made %d writes, want 0: %v", got, f.ops[writes:])
			}
			if diff := cmpDiff(before, f.String()); diff != "" {
				t.Errorf("kernel changed (-before +after):\n%s", diff)
			}
			if second.Changed != 0 {
				t.Errorf("second Set reports %d changes", second.Changed)
			}
			first.Changed = 0
			if diff := cmpDiff(first, second); diff != "" {
				t.Errorf("state changed (-first +second):\n%s", diff)
			}
		})
	}
}

func TestSetLeavesForeignAlone(t *testing.T) {
	// 10.0.0.100/24 contains the VIP 10.0.0.100/32 but is not it; 10.9.9.9/32
	// is a host prefix rhi does not own.
	foreign := []string{"10.0.0.100/24", "10.9.9.9/32", "fe80::1/64"}
	f, a, hook := newTest(t, foreign...)
	desired := owned("10.0.0.100/32", "-10.0.0.1/32")
	var st State
	for range 3 {
		var err error
		if st, err = a.Set(context.Background(), DesiredOf(desired)); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	if diff := cmpDiff(want("10.0.0.100/24", "10.0.0.100/32", "10.9.9.9/32", "fe80::1/64"), f.String()); diff != "" {
		t.Errorf("kernel (-want +got):\n%s", diff)
	}
	// The link-local address stays on the kernel but is not reported.
	if diff := cmpDiff(prefixes("10.0.0.100/24", "10.9.9.9/32"), st.Foreign); diff != "" {
		t.Errorf("Foreign (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(prefixes("10.0.0.100/32"), st.Present); diff != "" {
		t.Errorf("Present (-want +got):\n%s", diff)
	}

	// Someone removes one foreign address: the new set is reported once.
	delete(f.links[iface].addrs, netip.MustParsePrefix("10.9.9.9/32"))
	for range 2 {
		if _, err := a.Set(context.Background(), DesiredOf(desired)); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	wantLog := []string{
		"info interface updated added=1 deleted=0",
		"info foreign addresses on interface, left alone: [10.0.0.100/24 10.9.9.9/32]",
		"info foreign addresses on interface, left alone: [10.0.0.100/24]",
	}
	if diff := cmpDiff(wantLog, logged(hook)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestSetPartialFailure(t *testing.T) {
	f, a, _ := newTest(t, "10.0.0.5/32", "10.0.0.6/32")
	f.failAdd = map[netip.Prefix]error{netip.MustParsePrefix("10.0.0.2/32"): unix.EPERM}
	f.failDel = map[netip.Prefix]error{netip.MustParsePrefix("10.0.0.5/32"): unix.EBUSY}
	desired := owned("10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32", "-10.0.0.5/32", "-10.0.0.6/32")

	st, err := a.Set(context.Background(), DesiredOf(desired))
	if err == nil {
		t.Fatal("Set: no error, want the two failures")
	}
	wantErr := `vip "10.0.0.2/32": add on "rhi0": operation not permitted (changing addresses needs CAP_NET_ADMIN)` + "\n" +
		`vip "10.0.0.5/32": delete on "rhi0": device or resource busy`
	if err.Error() != wantErr {
		t.Errorf("error:\n%s\nwant:\n%s", err, wantErr)
	}
	if !errors.Is(err, unix.EPERM) || !errors.Is(err, unix.EBUSY) {
		t.Errorf("error %v does not wrap EPERM and EBUSY", err)
	}
	if diff := cmpDiff(want("10.0.0.1/32", "10.0.0.3/32", "10.0.0.5/32"), f.String()); diff != "" {
		t.Errorf("kernel (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(prefixes("10.0.0.1/32", "10.0.0.3/32", "10.0.0.5/32"), st.Present); diff != "" {
		t.Errorf("Present, what was reached (-want +got):\n%s", diff)
	}

	// The next call retries only what is still wrong.
	f.failAdd, f.failDel, f.ops = nil, nil, nil
	if _, err := a.Set(context.Background(), DesiredOf(desired)); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if diff := cmpDiff([]string{"add 10.0.0.2/32", "del 10.0.0.5/32"}, f.ops); diff != "" {
		t.Errorf("retry ops (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(want("10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32"), f.String()); diff != "" {
		t.Errorf("kernel after retry (-want +got):\n%s", diff)
	}
}

func TestSetReportsIPv6AddressTakenWithOtherLength(t *testing.T) {
	// The kernel holds an IPv6 address once, whatever its prefix length.
	f, a, _ := newTest(t, "2001:db8::1/64")
	for range 2 { // reported on every call, never written
		st, err := a.Set(context.Background(), DesiredOf(owned("2001:db8::1/128", "10.0.0.1/32")))
		wantErr := `vip "2001:db8::1/128": add on "rhi0": the address is already there as "2001:db8::1/64"`
		if err == nil || err.Error() != wantErr {
			t.Errorf("Set error = %v, want %s", err, wantErr)
		}
		if diff := cmpDiff(prefixes("10.0.0.1/32"), st.Present); diff != "" {
			t.Errorf("Present (-want +got):\n%s", diff)
		}
	}
	if diff := cmpDiff([]string{"add 10.0.0.1/32"}, f.ops); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
}

func TestSetRejectsNonHostPrefix(t *testing.T) {
	f, a, _ := newTest(t)
	st, err := a.Set(context.Background(), DesiredOf(owned("10.0.0.0/24", "::ffff:10.0.0.1/128", "10.0.0.1/32")))
	wantErr := `vip "10.0.0.0/24": not a /32 or /128 host prefix` + "\n" + `vip "::ffff:10.0.0.1/128": not a /32 or /128 host prefix`
	// Map order is random, so compare the sorted lines.
	var got []string
	if err != nil {
		got = strings.Split(err.Error(), "\n")
		slices.Sort(got)
	}
	if diff := cmpDiff(strings.Split(wantErr, "\n"), got); diff != "" {
		t.Errorf("error lines (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(want("10.0.0.1/32"), f.String()); diff != "" {
		t.Errorf("kernel (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(prefixes("10.0.0.1/32"), st.Present); diff != "" {
		t.Errorf("Present (-want +got):\n%s", diff)
	}
}

func TestMissingInterface(t *testing.T) {
	f := newFakeKernel()
	log, _ := logtest.NewNullLogger()
	a := New(f, iface, log)

	st, err := a.Set(context.Background(), DesiredOf(owned("10.0.0.1/32")))
	if !errors.Is(err, ErrNoInterface) {
		t.Errorf("Set error = %v, want ErrNoInterface", err)
	}
	if want := `no such interface "rhi0": no such device`; err == nil || err.Error() != want {
		t.Errorf("Set error = %v, want %q", err, want)
	}
	if diff := cmpDiff(State{}, st); diff != "" {
		t.Errorf("Set state (-want +got):\n%s", diff)
	}
	if f.writes != 0 {
		t.Errorf("Set made %d writes on a missing interface", f.writes)
	}
	if _, err := a.Observe(context.Background()); !errors.Is(err, ErrNoInterface) {
		t.Errorf("Observe error = %v, want ErrNoInterface", err)
	}

	// The interface appears: the next Set just works.
	f.addLink(iface)
	if _, err := a.Set(context.Background(), DesiredOf(owned("10.0.0.1/32"))); err != nil {
		t.Fatalf("Set after the interface appeared: %v", err)
	}
	if diff := cmpDiff(want("10.0.0.1/32"), f.String()); diff != "" {
		t.Errorf("kernel (-want +got):\n%s", diff)
	}
}

func TestInterfaceRemovedBetweenReadAndWrite(t *testing.T) {
	f, a, _ := newTest(t)
	f.beforeWrite = func(string, netip.Prefix) { delete(f.links, iface) }
	_, err := a.Set(context.Background(), DesiredOf(owned("10.0.0.1/32", "10.0.0.2/32")))
	// Both adds are tried and both fail; nothing panics.
	if !errors.Is(err, unix.ENODEV) || len(f.ops) != 2 {
		t.Errorf("Set error = %v after ops %v, want two ENODEV failures", err, f.ops)
	}
}

func TestDumpInterrupted(t *testing.T) {
	start := []string{"10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32", "10.0.0.4/32", "2001:db8::1/128", "2001:db8::2/128"}
	desired := owned(start...)

	t.Run("once", func(t *testing.T) {
		f, a, _ := newTest(t, start...)
		f.interrupted = 1
		st, err := a.Set(context.Background(), DesiredOf(desired))
		if err != nil {
			t.Fatalf("Set: %v", err)
		}
		// Trusting the half list would have re-added three addresses.
		if f.writes != 0 {
			t.Errorf("Set made writes %v after an interrupted dump", f.ops)
		}
		if diff := cmpDiff(prefixes(start...), st.Present); diff != "" {
			t.Errorf("Present (-want +got):\n%s", diff)
		}

		f.interrupted = 1
		obs, err := a.Observe(context.Background())
		if err != nil {
			t.Fatalf("Observe: %v", err)
		}
		if diff := cmpDiff(prefixes(start...), obs.Present); diff != "" {
			t.Errorf("Observe Present (-want +got):\n%s", diff)
		}
	})
	t.Run("always", func(t *testing.T) {
		f, a, _ := newTest(t, start...)
		f.interrupted = maxReads
		_, err := a.Set(context.Background(), DesiredOf(owned("-10.0.0.1/32")))
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			t.Errorf("Set error = %v, want ErrDumpInterrupted", err)
		}
		if f.writes != 0 || f.interrupted != 0 {
			t.Errorf("Set made writes %v, left %d interruptions; want no writes after %d reads", f.ops, f.interrupted, maxReads)
		}
	})
}

func TestRepairsExternalChanges(t *testing.T) {
	f, a, hook := newTest(t)
	desired := owned("10.0.0.1/32", "-10.0.0.2/32", "2001:db8::1/128")
	if _, err := a.Set(context.Background(), DesiredOf(desired)); err != nil {
		t.Fatalf("Set: %v", err)
	}
	// Someone deletes a VIP rhi holds and adds one it withdrew.
	l := f.links[iface]
	delete(l.addrs, netip.MustParsePrefix("10.0.0.1/32"))
	l.addrs[netip.MustParsePrefix("10.0.0.2/32")] = fakeAddr{}
	hook.Reset()
	f.ops = nil

	for range 2 { // the second call must neither write nor warn
		if _, err := a.Set(context.Background(), DesiredOf(desired)); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	if diff := cmpDiff([]string{"add 10.0.0.1/32", "del 10.0.0.2/32"}, f.ops); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(want("10.0.0.1/32", "2001:db8::1/128 nodad"), f.String()); diff != "" {
		t.Errorf("kernel (-want +got):\n%s", diff)
	}
	wantLog := []string{
		"warning repaired address vip=10.0.0.1/32 action=add reason=changed by someone else",
		"warning repaired address vip=10.0.0.2/32 action=delete reason=changed by someone else",
		"info interface updated added=1 deleted=1",
	}
	if diff := cmpDiff(wantLog, logged(hook)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestRaceWithSomeoneElseCountsAsReached(t *testing.T) {
	// Between our read and our write someone else makes the same change:
	// EEXIST and EADDRNOTAVAIL mean the goal is reached.
	f, a, _ := newTest(t, "10.0.0.2/32")
	f.beforeWrite = func(op string, p netip.Prefix) {
		if op == "add" {
			f.links[iface].addrs[p] = fakeAddr{}
		} else {
			delete(f.links[iface].addrs, p)
		}
	}
	st, err := a.Set(context.Background(), DesiredOf(owned("10.0.0.1/32", "-10.0.0.2/32")))
	if err != nil {
		t.Fatalf("Set: %v", err)
	}
	if diff := cmpDiff([]string{"add 10.0.0.1/32", "del 10.0.0.2/32"}, f.ops); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(prefixes("10.0.0.1/32"), st.Present); diff != "" {
		t.Errorf("Present (-want +got):\n%s", diff)
	}
}

func TestLinkDownIsReportedOncePerChange(t *testing.T) {
	f, a, hook := newTest(t)
	l := f.links[iface]
	l.up = false
	desired := owned("10.0.0.1/32")
	for range 2 {
		st, err := a.Set(context.Background(), DesiredOf(desired))
		if err != nil {
			t.Fatalf("Set: %v", err)
		}
		if st.Up || !st.Has(netip.MustParsePrefix("10.0.0.1/32")) {
			t.Errorf("state %+v, want down and holding the VIP", st)
		}
	}
	l.up = true
	if _, err := a.Set(context.Background(), DesiredOf(desired)); err != nil {
		t.Fatalf("Set: %v", err)
	}
	l.up = false
	if _, err := a.Set(context.Background(), DesiredOf(desired)); err != nil {
		t.Fatalf("Set: %v", err)
	}
	down := "warning interface is down: addresses are kept, but BIRD announces nothing from it"
	wantLog := []string{down, "info interface updated added=1 deleted=0", "info interface is up again", down}
	if diff := cmpDiff(wantLog, logged(hook)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestObserve(t *testing.T) {
	_, a, _ := newTest(t, "2001:db8::1/128", "10.0.0.100/24", "10.0.0.1/32", "fe80::1/64")
	st, err := a.Observe(context.Background())
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	wantSt := State{
		Exists: true, Up: true, LowerUp: true,
		Present: prefixes("10.0.0.1/32", "2001:db8::1/128"),
		Foreign: prefixes("10.0.0.100/24"), // link-local fe80::1/64 is not reported
	}
	if diff := cmpDiff(wantSt, st); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// TestSetStopsWhenCancelled: a Set on a cancelled ctx writes nothing.
func TestSetStopsWhenCancelled(t *testing.T) {
	f, a, _ := newTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Set(ctx, DesiredOf(owned("10.0.0.4/32"))); !errors.Is(err, context.Canceled) || len(f.ops) != 0 {
		t.Errorf("Set on a cancelled ctx: error %v, ops %v; want context.Canceled and no ops", err, f.ops)
	}
}

// TestSetBatchStopsWhenCancelled: in batches, a cancelled ctx stops Set
// between two sends: the send under way is made whole, the
// rest is not, and the error says how much is left.
func TestSetBatchStopsWhenCancelled(t *testing.T) {
	f, a, _ := newTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.beforeWrite = func(string, netip.Prefix) { cancel() }
	var vips []string
	for i := range rtnl.BatchSize + 44 {
		vips = append(vips, fmt.Sprintf("10.0.%d.%d/32", i/250, i%250+1))
	}
	st, err := a.Set(ctx, DesiredOf(owned(vips...)))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), fmt.Sprintf("44 of %d changes not made", len(vips))) {
		t.Errorf("Set error = %v, want context.Canceled with 44 changes not made", err)
	}
	if len(f.ops) != rtnl.BatchSize || len(st.Present) != rtnl.BatchSize {
		t.Errorf("%d writes and %d present after the first send, want %d", len(f.ops), len(st.Present), rtnl.BatchSize)
	}
	f.beforeWrite = nil
	st, err = a.Set(context.Background(), DesiredOf(owned(vips...)))
	if err != nil || len(st.Present) != len(vips) {
		t.Errorf("the next Set: error %v, %d present; want the rest added", err, len(st.Present))
	}
}

// TestSetBatchAnswersLost: a send whose answers stop coming (the socket's
// deadline) leaves what was answered recorded and the rest to the next
// Set, which finds the change the kernel made unanswered already made.
func TestSetBatchAnswersLost(t *testing.T) {
	f, a, _ := newTest(t)
	f.loseAcks = 4
	vips := []string{"10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32", "10.0.0.4/32", "10.0.0.5/32", "10.0.0.6/32"}
	st, err := a.Set(context.Background(), DesiredOf(owned(vips...)))
	if err == nil || !strings.Contains(err.Error(), "3 of 6 changes not made") || !errors.Is(err, unix.EAGAIN) {
		t.Errorf("Set error = %v, want 3 of 6 not made, no answer", err)
	}
	if diff := cmpDiff(prefixes("10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32"), st.Present); diff != "" {
		t.Errorf("Present: the answered changes (-want +got):\n%s", diff)
	}
	if got := f.String(); got != want("10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32", "10.0.0.4/32") {
		t.Errorf("kernel after the lost answers:\n%s", got)
	}
	f.ops = nil
	st, err = a.Set(context.Background(), DesiredOf(owned(vips...)))
	if err != nil || len(st.Present) != 6 {
		t.Fatalf("the next Set: error %v, present %v", err, st.Present)
	}
	if diff := cmpDiff([]string{"add 10.0.0.5/32", "add 10.0.0.6/32"}, f.ops); diff != "" {
		t.Errorf("the next Set's writes (-want +got):\n%s", diff)
	}
}

// TestSequence replays desired states in order and then shuffled, checking
// after every step that the kernel holds exactly the wanted VIPs plus the
// foreign addresses, whatever came before.
func TestSequence(t *testing.T) {
	all := []string{"10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32", "2001:db8::1/128", "2001:db8::2/128"}
	foreign := []string{"10.0.0.0/24", "fe80::1/64"}
	steps := [][]string{
		{},
		{"10.0.0.1/32"},
		{"10.0.0.1/32", "2001:db8::1/128"},
		{"10.0.0.2/32", "10.0.0.3/32", "2001:db8::2/128"},
		all,
		{"2001:db8::1/128"},
		{},
		{"10.0.0.3/32", "2001:db8::1/128", "2001:db8::2/128"},
	}
	desired := func(wanted []string) map[netip.Prefix]bool {
		m := map[netip.Prefix]bool{}
		for _, p := range all {
			m[netip.MustParsePrefix(p)] = slices.Contains(wanted, p)
		}
		return m
	}
	expect := func(wanted []string) string {
		lines := slices.Clone(foreign)
		for _, p := range wanted {
			if netip.MustParsePrefix(p).Addr().Is6() {
				p += " nodad"
			}
			lines = append(lines, p)
		}
		return want(lines...)
	}

	f, a, _ := newTest(t, foreign...)
	run := func(order []int) {
		t.Helper()
		for _, i := range order {
			st, err := a.Set(context.Background(), DesiredOf(desired(steps[i])))
			if err != nil {
				t.Fatalf("step %d %v: %v", i, steps[i], err)
			}
			if diff := cmpDiff(expect(steps[i]), f.String()); diff != "" {
				t.Fatalf("step %d %v: kernel (-want +got):\n%s", i, steps[i], diff)
			}
			if diff := cmpDiff(prefixes(steps[i]...), st.Present); diff != "" {
				t.Fatalf("step %d: Present (-want +got):\n%s", i, diff)
			}
		}
	}
	order := make([]int, len(steps))
	for i := range order {
		order[i] = i
	}
	run(order)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		run(order)
	}
}

func TestSetCountsChanges(t *testing.T) {
	f, a, _ := newTest(t)
	desired := owned("10.0.0.1/32", "10.0.0.2/32", "-10.0.0.3/32")
	steps := []struct {
		name string
		edit func()
		want int
	}{
		{"first set adds two", func() {}, 2},
		{"same again changes nothing", func() {}, 0},
		{"a repair counts", func() { delete(f.links[iface].addrs, netip.MustParsePrefix("10.0.0.2/32")) }, 1},
		{"a removal counts", func() { f.links[iface].addrs[netip.MustParsePrefix("10.0.0.3/32")] = fakeAddr{} }, 1},
	}
	for _, s := range steps {
		s.edit()
		st, err := a.Set(context.Background(), DesiredOf(desired))
		if err != nil {
			t.Fatal(err)
		}
		if st.Changed != s.want {
			t.Errorf("%s: Changed = %d, want %d", s.name, st.Changed, s.want)
		}
	}
}

func peers(ss ...string) []Peer {
	var out []Peer
	for _, s := range ss {
		local, peer, _ := strings.Cut(s, " peer ")
		out = append(out, Peer{Local: netip.MustParseAddr(local), Peer: netip.MustParsePrefix(peer)})
	}
	return out
}

// TestPointToPointIsForeign: an entry whose local address is a VIP's but
// whose peer is another address is not that VIP. Taken for it, an unwanted
// 10.9.0.1/32 was deleted on every tick (the kernel answers EADDRNOTAVAIL,
// taken for success) while a wanted one was believed present and never
// added; an unwanted 2001:db8::1/128 took the foreign IPv6 entry with it.
func TestPointToPointIsForeign(t *testing.T) {
	ptp := []string{"10.9.0.1 peer 10.9.0.2/32", "2001:db8::1 peer 2001:db8::2/128"}
	f, a, hook := newTest(t, append(ptp, "10.0.0.1/32")...)
	ctx := context.Background()

	// Unwanted, whatever the entry's local or peer address: no write.
	none := owned("-10.9.0.1/32", "-10.9.0.2/32", "-2001:db8::1/128", "-2001:db8::2/128", "10.0.0.1/32")
	st, err := a.Set(ctx, DesiredOf(none))
	if err != nil {
		t.Fatalf("Set: %v", err)
	}
	if len(f.ops) != 0 {
		t.Errorf("Set wrote %v, want nothing", f.ops)
	}
	wantSt := State{Exists: true, Up: true, LowerUp: true, Present: prefixes("10.0.0.1/32"), ForeignPeers: peers(ptp...)}
	if diff := cmpDiff(wantSt, st); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	obs, err := a.Observe(ctx)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if diff := cmpDiff(wantSt, obs); diff != "" {
		t.Errorf("Observe (-want +got):\n%s", diff)
	}

	// Wanted: the IPv4 VIP is added next to the peer entry, as the
	// kernel allows; the IPv6 one cannot be, and says why each time.
	both := owned("10.9.0.1/32", "2001:db8::1/128", "10.0.0.1/32")
	for range 2 {
		st, err = a.Set(ctx, DesiredOf(both))
		wantErr := `vip "2001:db8::1/128": add on "rhi0": the address is already there as "2001:db8::1 peer 2001:db8::2/128"`
		if err == nil || err.Error() != wantErr {
			t.Errorf("Set error = %v, want %s", err, wantErr)
		}
		if diff := cmpDiff(prefixes("10.0.0.1/32", "10.9.0.1/32"), st.Present); diff != "" {
			t.Errorf("Present (-want +got):\n%s", diff)
		}
	}
	if diff := cmpDiff([]string{"add 10.9.0.1/32"}, f.ops); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(want(append(ptp, "10.0.0.1/32", "10.9.0.1/32")...), f.String()); diff != "" {
		t.Errorf("kernel (-want +got):\n%s", diff)
	}

	// Withdrawn again: only rhi's own entry goes.
	f.ops = nil
	if _, err := a.Set(ctx, DesiredOf(none)); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if diff := cmpDiff([]string{"del 10.9.0.1/32"}, f.ops); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(want(append(ptp, "10.0.0.1/32")...), f.String()); diff != "" {
		t.Errorf("kernel (-want +got):\n%s", diff)
	}
	wantLog := []string{
		"info foreign addresses on interface, left alone: [10.9.0.1 peer 10.9.0.2/32 2001:db8::1 peer 2001:db8::2/128]",
		"info interface updated added=1 deleted=0",
		"info interface updated added=0 deleted=1",
	}
	if diff := cmpDiff(wantLog, logged(hook)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// TestFakeDeletesLikeTheKernel pins the fake's kernel rules for
// point-to-point entries (checked against Linux in the integration tests).
func TestFakeDeletesLikeTheKernel(t *testing.T) {
	f := newFakeKernel()
	f.addLink(iface, "10.9.0.1 peer 10.9.0.2/32", "2001:db8::1 peer 2001:db8::2/128")
	link, _ := f.LinkByName(iface)
	write := func(p string, add bool) error {
		answers, err := f.WriteAddrs(context.Background(), link.Attrs().Index, []rtnl.AddrChange{{Prefix: netip.MustParsePrefix(p), Add: add}})
		if err != nil {
			return err
		}
		return answers[0]
	}
	if err := write("10.9.0.1/32", false); !errors.Is(err, unix.EADDRNOTAVAIL) {
		t.Errorf("IPv4 delete of the local address: %v, want EADDRNOTAVAIL", err)
	}
	if err := write("2001:db8::1/128", true); !errors.Is(err, unix.EEXIST) {
		t.Errorf("IPv6 add of the local address: %v, want EEXIST", err)
	}
	if err := write("2001:db8::1/128", false); err != nil {
		t.Errorf("IPv6 delete of the local address: %v, want it to take the peer entry", err)
	}
	if diff := cmpDiff(want("10.9.0.1 peer 10.9.0.2/32"), f.String()); diff != "" {
		t.Errorf("kernel (-want +got):\n%s", diff)
	}
}

// TestNeedlessDeleteIsChecked: when the kernel answers a delete with
// EADDRNOTAVAIL, the address is read again. Gone (someone else deleted it
// meanwhile, see TestRaceWithSomeoneElseCountsAsReached) is success; still
// listed means the kernel holds no entry of that name to delete, which must
// be an error every tick, not a "deleted" followed by a "repaired".
func TestNeedlessDeleteIsChecked(t *testing.T) {
	f, a, hook := newTest(t, "10.0.0.5/32", "10.0.0.6/32")
	f.failDel = map[netip.Prefix]error{netip.MustParsePrefix("10.0.0.5/32"): unix.EADDRNOTAVAIL}
	desired := owned("-10.0.0.5/32", "-10.0.0.6/32")
	for i := range 2 {
		st, err := a.Set(context.Background(), DesiredOf(desired))
		wantErr := `vip "10.0.0.5/32": delete on "rhi0": cannot assign requested address, yet the address is still listed`
		if err == nil || err.Error() != wantErr || !errors.Is(err, unix.EADDRNOTAVAIL) {
			t.Errorf("Set %d: error = %v, want %s", i, err, wantErr)
		}
		if diff := cmpDiff(prefixes("10.0.0.5/32"), st.Present); diff != "" || st.Changed != 1-i {
			t.Errorf("Set %d: %d changed, Present (-want +got):\n%s", i, st.Changed, diff)
		}
	}
	if diff := cmpDiff([]string{"del 10.0.0.5/32", "del 10.0.0.6/32", "del 10.0.0.5/32"}, f.ops); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	if diff := cmpDiff([]string{"info interface updated added=0 deleted=1"}, logged(hook)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// EachDifference yields, in order, what is in exactly one of two sorted
// lists, as comparing State.Has for every prefix of both would.
func TestEachDifference(t *testing.T) {
	tests := []struct{ a, b, want []netip.Prefix }{
		{nil, nil, nil},
		{prefixes("10.0.0.1/32"), nil, prefixes("10.0.0.1/32")},
		{nil, prefixes("10.0.0.1/32", "2001:db8::1/128"), prefixes("10.0.0.1/32", "2001:db8::1/128")},
		{prefixes("10.0.0.1/32", "10.0.0.2/32"), prefixes("10.0.0.1/32", "10.0.0.2/32"), nil},
		{
			prefixes("10.0.0.1/32", "10.0.0.3/32", "10.0.0.9/32", "2001:db8::1/128"),
			prefixes("10.0.0.2/32", "10.0.0.3/32", "2001:db8::1/128", "2001:db8::2/128"),
			prefixes("10.0.0.1/32", "10.0.0.2/32", "10.0.0.9/32", "2001:db8::2/128"),
		},
	}
	same := prefixes("10.0.0.1/32", "10.0.0.2/32")
	tests = append(tests,
		struct{ a, b, want []netip.Prefix }{same, same, nil}, // one slice: no walk
		struct{ a, b, want []netip.Prefix }{same, same[:1], prefixes("10.0.0.2/32")},
		// Other lengths sort as Prefix.Compare says.
		struct{ a, b, want []netip.Prefix }{
			prefixes("10.0.0.0/24", "10.0.0.1/32", "2001:db8::/64"),
			prefixes("10.0.0.0/8", "10.0.0.1/32", "2001:db8::1/128"),
			prefixes("10.0.0.0/8", "10.0.0.0/24", "2001:db8::/64", "2001:db8::1/128"),
		})
	for _, tt := range tests {
		var got []netip.Prefix
		EachDifference(tt.a, tt.b, func(p netip.Prefix) { got = append(got, p) })
		if diff := cmpDiff(tt.want, got); diff != "" {
			t.Errorf("EachDifference(%v, %v) (-want +got):\n%s", tt.a, tt.b, diff)
		}
		// The same as asking each list about every prefix of both.
		var slow []netip.Prefix
		for _, p := range append(slices.Clone(tt.a), tt.b...) {
			if (State{Present: tt.a}).Has(p) != (State{Present: tt.b}).Has(p) {
				slow = append(slow, p)
			}
		}
		slices.SortFunc(slow, netip.Prefix.Compare)
		if diff := cmpDiff(slow, got); diff != "" {
			t.Errorf("EachDifference(%v, %v) against Has (-has +got):\n%s", tt.a, tt.b, diff)
		}
	}
}

// TestSetStatesAreNeverChanged holds every State Set returned, with a
// copy of its Present taken at once, through Sets that add, delete, find
// nothing to do and repair, and a renewal: Set shares Present with the
// Announcer and its earlier States, so none may change under
// its holder, and appending to one must not write into another.
func TestSetStatesAreNeverChanged(t *testing.T) {
	ctx := context.Background()
	f, a, _ := newTest(t)
	type held struct {
		st   State
		copy []netip.Prefix
	}
	var all []held
	set := func(o map[netip.Prefix]bool) State {
		t.Helper()
		st, err := a.Set(ctx, DesiredOf(o))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, held{st, slices.Clone(st.Present)})
		return st
	}
	set(owned("10.0.0.1/32", "10.0.0.2/32", "-10.0.0.3/32"))
	set(owned("10.0.0.1/32", "10.0.0.2/32", "-10.0.0.3/32"))
	st := set(owned("10.0.0.1/32", "-10.0.0.2/32", "10.0.0.3/32"))
	_ = append(st.Present, netip.MustParsePrefix("10.9.9.9/32"))
	if err := f.del(f.links[iface], netip.MustParsePrefix("10.0.0.1/32")); err != nil {
		t.Fatal(err)
	}
	set(owned("10.0.0.1/32", "-10.0.0.2/32", "10.0.0.3/32")) // repairs 10.0.0.1
	if err := a.Renew(ctx, netip.MustParsePrefix("10.0.0.3/32"), true); err != nil {
		t.Fatal(err)
	}
	set(owned("10.0.0.1/32", "-10.0.0.2/32", "10.0.0.3/32"))
	set(owned("10.0.0.4/32"))
	set(owned())
	for i, h := range all {
		if d := cmpDiff(h.copy, h.st.Present); d != "" {
			t.Errorf("State %d of Set changed after it was returned (-then +now):\n%s", i, d)
		}
	}
	if got, want := all[len(all)-2].st.Present, prefixes("10.0.0.4/32"); !slices.Equal(got, want) {
		t.Errorf("Present = %v, want %v", got, want)
	}
}

// TestSetRefusesBrokenDesired: a Desired out of order, with a repeat or
// with a VIP in both lists is an error that names it, and Set then
// changes nothing; DesiredOf builds one Set takes.
func TestSetRefusesBrokenDesired(t *testing.T) {
	tests := []struct {
		name string
		want Desired
		err  string
	}{
		{"unsorted", Desired{Present: prefixes("10.0.0.2/32", "10.0.0.1/32")}, `"10.0.0.2/32" before "10.0.0.1/32"`},
		{"repeat", Desired{Absent: prefixes("10.0.0.1/32", "10.0.0.1/32")}, `absent VIPs not sorted without repeats`},
		{"both", Desired{Present: prefixes("10.0.0.1/32"), Absent: prefixes("10.0.0.1/32")}, `vip "10.0.0.1/32" desired both present and absent`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, a, _ := newTest(t, "10.0.0.1/32")
			before := f.String()
			_, err := a.Set(context.Background(), tt.want)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want one with %q", err, tt.err)
			}
			if got := f.String(); got != before {
				t.Errorf("the interface changed: %q, was %q", got, before)
			}
		})
	}
	want := DesiredOf(owned("10.0.0.2/32", "-10.0.0.3/32", "10.0.0.1/32", "-2001:db8::1/128"))
	if diff := cmpDiff(Desired{Present: prefixes("10.0.0.1/32", "10.0.0.2/32"), Absent: prefixes("10.0.0.3/32", "2001:db8::1/128")}, want); diff != "" {
		t.Errorf("DesiredOf (-want +got):\n%s", diff)
	}
	if err := want.check(); err != nil {
		t.Errorf("DesiredOf's result breaks the contract: %v", err)
	}
}
