package vip

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRenew(t *testing.T) {
	tests := []struct {
		name    string
		start   []string
		vip     string
		present bool
		ops     []string
		err     string
		after   string
	}{
		{"present: delete then add back", []string{"10.0.0.1/32"}, "10.0.0.1/32", true,
			[]string{"del 10.0.0.1/32", "add 10.0.0.1/32"}, "", want("10.0.0.1/32")},
		{"absent: add then delete", nil, "10.0.0.1/32", false,
			[]string{"add 10.0.0.1/32", "del 10.0.0.1/32"}, "", want()},
		{"ipv6 keeps nodad", []string{"2001:db8::1/128"}, "2001:db8::1/128", true,
			[]string{"del 2001:db8::1/128", "add 2001:db8::1/128"}, "", want("2001:db8::1/128 nodad")},
		{"refuses when the interface disagrees", nil, "10.0.0.1/32", true,
			nil, `vip "10.0.0.1/32": renew on "rhi0": the address is absent, not present`, want()},
		{"refuses a non-host prefix", nil, "10.0.0.0/24", false, nil, "not a /32 or /128", want()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, a, hook := newTest(t, tt.start...)
			err := a.Renew(context.Background(), netip.MustParsePrefix(tt.vip), tt.present)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if diff := cmpDiff(tt.ops, f.ops); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmpDiff(tt.after, f.String()); diff != "" {
				t.Errorf("kernel (-want +got):\n%s", diff)
			}
			// A renewal is no change of state: nothing at Info (the daemon
			// logs one line per batch), one Debug line per address.
			if l := logged(hook); len(l) != 0 {
				t.Errorf("logged %v at info or above, want nothing", l)
			}
			var debug []string
			for _, e := range hook.AllEntries() {
				debug = append(debug, e.Message+" vip="+fmt.Sprint(e.Data["vip"])+" action="+fmt.Sprint(e.Data["action"]))
			}
			var wantDebug []string
			if tt.err == "" {
				wantDebug = []string{"renewed address for BIRD vip=" + tt.vip + " action=renew"}
			}
			if diff := cmpDiff(wantDebug, debug); diff != "" {
				t.Errorf("debug log (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenewHalfDone: when the second write of a renewal fails, the address
// is left in the opposite state by rhi itself. The next Set must put it
// right as an ordinary change, not warn of a change by someone else, and
// must not report it as it was.
func TestRenewHalfDone(t *testing.T) {
	p := netip.MustParsePrefix("10.0.0.1/32")
	tests := []struct {
		name    string
		start   []string
		present bool
		fail    func(f *fakeKernel)
		err     string
		next    map[netip.Prefix]bool
		ops     []string
		log     []string
		after   string
	}{
		{"re-add fails; the next Set adds", []string{"10.0.0.1/32"}, true,
			func(f *fakeKernel) { f.failAdd = map[netip.Prefix]error{p: unix.EPERM} },
			`vip "10.0.0.1/32": renew (add) on "rhi0": operation not permitted (changing addresses needs CAP_NET_ADMIN); the address is absent until the next Set`,
			owned("10.0.0.1/32"), []string{"add 10.0.0.1/32"},
			[]string{"info interface updated added=1 deleted=0"}, want("10.0.0.1/32")},
		{"re-delete fails; the next Set deletes", nil, false,
			func(f *fakeKernel) { f.failDel = map[netip.Prefix]error{p: unix.EBUSY} },
			`vip "10.0.0.1/32": renew (delete) on "rhi0": device or resource busy; the address is present until the next Set`,
			owned("-10.0.0.1/32"), []string{"del 10.0.0.1/32"},
			[]string{"info interface updated added=0 deleted=1"}, want()},
		{"re-add fails, then it is not wanted: nothing to do, nothing present", []string{"10.0.0.1/32"}, true,
			func(f *fakeKernel) { f.failAdd = map[netip.Prefix]error{p: unix.EPERM} },
			"the address is absent until the next Set",
			owned("-10.0.0.1/32"), nil, nil, want()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, a, hook := newTest(t, tt.start...)
			ctx := context.Background()
			if _, err := a.Set(ctx, DesiredOf(owned(map[bool]string{true: "", false: "-"}[tt.present]+p.String()))); err != nil {
				t.Fatalf("Set: %v", err)
			}
			tt.fail(f)
			err := a.Renew(ctx, p, tt.present)
			if err == nil {
				t.Fatalf("Renew: no error, want %q", tt.err)
			}
			if !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Renew error = %v, want %q", err, tt.err)
			}
			f.failAdd, f.failDel, f.ops = nil, nil, nil
			hook.Reset()
			st, err := a.Set(ctx, DesiredOf(tt.next))
			if err != nil {
				t.Fatalf("Set after the renewal: %v", err)
			}
			if diff := cmpDiff(tt.ops, f.ops); diff != "" {
				t.Errorf("ops (-want +got):\n%s", diff)
			}
			if diff := cmpDiff(tt.log, logged(hook)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			if diff := cmpDiff(tt.after, f.String()); diff != "" {
				t.Errorf("kernel (-want +got):\n%s", diff)
			}
			var wantPresent []netip.Prefix
			if tt.next[p] {
				wantPresent = []netip.Prefix{p}
			}
			if diff := cmpDiff(wantPresent, st.Present); diff != "" {
				t.Errorf("Present (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenewOfAnAddressSomeoneElseAdded: a VIP the previous Set left off
// the interface, added by someone else and then renewed as present (the
// caller wants it now), is present for the next Set, which has nothing to
// write: what Renew learnt outlives the Announcer's compact memory of the
// previous Set, and the Set after it says the same.
func TestRenewOfAnAddressSomeoneElseAdded(t *testing.T) {
	ctx := context.Background()
	f, a, _ := newTest(t, "10.0.0.1/32")
	p := netip.MustParsePrefix("10.0.0.2/32")
	if _, err := a.Set(ctx, DesiredOf(owned("10.0.0.1/32", "-10.0.0.2/32"))); err != nil {
		t.Fatal(err)
	}
	f.links[iface].addrs[p] = fakeAddr{}
	if err := a.Renew(ctx, p, true); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		writes := f.writes
		st, err := a.Set(ctx, DesiredOf(owned("10.0.0.1/32", "10.0.0.2/32")))
		if err != nil {
			t.Fatal(err)
		}
		if want := prefixes("10.0.0.1/32", "10.0.0.2/32"); !slices.Equal(st.Present, want) || f.writes != writes {
			t.Fatalf("Set %d after the renewal: Present %v after %d writes, want %v after none", i, st.Present, f.writes-writes, want)
		}
	}
	if a.reached != nil {
		t.Errorf("the Announcer keeps its map of %d VIPs between Sets", len(a.reached))
	}
}
