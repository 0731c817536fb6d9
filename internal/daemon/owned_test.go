package daemon

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/owned"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// fakeRecord is an ownership record in a temporary file that notes what
// the interface held at each write, and can be made to fail.
type fakeRecord struct {
	owned.File
	link   *fakeLink
	writes []string // the interface at each write
	fail   error
}

func (f *fakeRecord) Write(r owned.Record) error {
	f.writes = append(f.writes, f.link.text())
	if f.fail != nil {
		return f.fail
	}
	return f.File.Write(r)
}

func (f *fakeRecord) vips(t *testing.T) string {
	t.Helper()
	r, err := f.File.Read()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range r.VIPs {
		out = append(out, p.Addr().String())
	}
	return strings.Join(out, " ")
}

// ownRig is a rig with an ownership record at a temporary path, holding
// recorded (nothing written when recorded is nil).
func ownRig(t *testing.T, cfg *config.Config, link *fakeLink, recorded ...string) (*rig, *fakeRecord) {
	t.Helper()
	rec := &fakeRecord{File: owned.File(filepath.Join(t.TempDir(), "owned")), link: link}
	if recorded != nil {
		r := owned.Record{Iface: "rhi0"}
		for _, a := range recorded {
			r.VIPs = append(r.VIPs, netip.MustParsePrefix(a))
		}
		if err := rec.File.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	r := newRig(t, cfg, link)
	r.d.own.file = rec
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	return r, rec
}

// entries returns the log lines at level exactly that contain msg.
func (r *rig) entries(level logrus.Level, msg string) []*logrus.Entry {
	var out []*logrus.Entry
	for _, e := range r.logs.AllEntries() {
		if e.Level == level && e.Message == msg {
			out = append(out, e)
		}
	}
	return out
}

func withoutLast(cfg *config.Config) *config.Config {
	c := *cfg
	c.VIPs = c.VIPs[:len(c.VIPs)-1]
	return &c
}

// A restart with 10.0.0.102 dropped from the config withdraws it on the
// first tick, as the reload that dropped it would have.
func TestRestartWithdrawsARecordedVIPTheConfigDropped(t *testing.T) {
	link := newFakeLink("10.0.0.100/32", "10.0.0.101/32", "10.0.0.102/32")
	r, rec := ownRig(t, withoutLast(seed(config.Withdraw)), link, "10.0.0.100/32", "10.0.0.101/32", "10.0.0.102/32")
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101")
	warn := r.entries(logrus.WarnLevel, "vip that rhi put on the interface is no longer in the config; withdrawing")
	if len(warn) != 1 || warn[0].Data["vip"] != "10.0.0.102/32" || warn[0].Data["action"] != "withdraw" {
		t.Fatalf("warnings: %v", warn)
	}
	if n := len(r.d.Status().Interface.Unmanaged); n != 0 {
		t.Errorf("a recorded VIP was reported unmanaged too: %v", r.d.Status().Interface.Unmanaged)
	}
	r.tick(t) // the record shrinks once the orphan is gone
	if got := rec.vips(t); got != "10.0.0.100 10.0.0.101" {
		t.Errorf("record holds %q after the withdrawal", got)
	}
	if got := r.link.writeCount(); got != 1 {
		t.Errorf("%d interface writes, want the one delete", got)
	}
}

// A record that lists a dropped VIP no longer on the interface withdraws
// nothing and forgets it.
func TestRecordedVIPNotOnTheInterfaceIsForgotten(t *testing.T) {
	r, rec := ownRig(t, withoutLast(seed(config.Withdraw)), newFakeLink("10.0.0.100/32"), "10.0.0.100/32", "10.0.0.102/32")
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101")
	if got := rec.vips(t); got != "10.0.0.100 10.0.0.101" {
		t.Errorf("record holds %q", got)
	}
	if len(r.d.Status().Interface.Withdrawing) != 0 {
		t.Errorf("withdrawing %v", r.d.Status().Interface.Withdrawing)
	}
}

// Without a readable record nothing is withdrawn on its word: a VIP of the
// config already on the interface stays (no flap), an address of no config
// is unmanaged, and the record is written for next time.
func TestMissingOrUnreadableRecordWithdrawsNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, path string)
		level logrus.Level
	}{
		{"missing", func(*testing.T, string) {}, logrus.InfoLevel},
		{"garbage", func(t *testing.T, path string) { write(t, path, "hello\n") }, logrus.ErrorLevel},
		{"fifo", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}, logrus.ErrorLevel},
		{"other interface", func(t *testing.T, path string) {
			write(t, path, "interface eth9\n10.0.0.77/32\n")
		}, logrus.WarnLevel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := newFakeLink("10.0.0.100/32", "10.0.0.77/32")
			r, rec := ownRig(t, seed(config.Withdraw), link)
			tc.spoil(t, rec.String())
			r.tick(t)
			r.expect(t, "10.0.0.77 10.0.0.100 10.0.0.101 10.0.0.102")
			if got := r.link.writeCount(); got != 2 {
				t.Errorf("%d interface writes, want the 2 adds: 10.0.0.100 must never be deleted", got)
			}
			n := 0
			for _, e := range r.logs.AllEntries() {
				if e.Level == tc.level && e.Data["state_file"] == rec.String() {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d %s lines about the record, want 1", n, tc.level)
			}
			if got := r.d.Status().Interface.Unmanaged; !slices.Equal(got, []string{"10.0.0.77/32"}) {
				t.Errorf("unmanaged %v", got)
			}
			if tc.name == "fifo" {
				return // replaced only by a rename, which the test need not see
			}
			if got := rec.vips(t); got != "10.0.0.100 10.0.0.101 10.0.0.102" {
				t.Errorf("record holds %q", got)
			}
		})
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The record is written before an address it adds to the owned set is
// added, and not on the ticks that change neither.
func TestRecordWrittenBeforeTheOwnedSetGrows(t *testing.T) {
	link := newFakeLink()
	cfg := withoutLast(seed(config.Withdraw))
	r, rec := ownRig(t, cfg, link)
	r.tick(t)
	if !slices.Equal(rec.writes, []string{""}) {
		t.Fatalf("record writes saw the interface as %q, want one write before any add", rec.writes)
	}
	for range 5 {
		r.tick(t)
	}
	r.health.set(health.Down, api) // flaps do not change the owned set
	r.tick(t)
	r.health.set(health.Up, api)
	r.tick(t)
	if len(rec.writes) != 1 {
		t.Fatalf("%d record writes over unchanged ticks, want 1", len(rec.writes))
	}
	r.d.applyReload(seed(config.Withdraw))
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if len(rec.writes) != 2 || rec.writes[1] != "10.0.0.100 10.0.0.101" {
		t.Fatalf("record writes saw %q; want the second before 10.0.0.102 was added", rec.writes)
	}
	if got := rec.vips(t); got != "10.0.0.100 10.0.0.101 10.0.0.102" {
		t.Errorf("record holds %q", got)
	}
}

// A record that cannot be written is an error, logged once, shown in
// /status, retried before every change; until it is written no VIP it
// does not list is added (it is written before an add), and once it is,
// health decides them.
func TestRecordWriteFailureIsRetried(t *testing.T) {
	r, rec := ownRig(t, seed(config.Withdraw), newFakeLink())
	rec.fail = errors.New("read-only file system")
	r.tick(t)
	r.tick(t)
	r.expect(t, "")
	if n := r.count(logrus.ErrorLevel, "cannot write the ownership record"); n != 1 {
		t.Errorf("%d error lines, want 1", n)
	}
	if n := r.count(logrus.ErrorLevel, "vips not added: the ownership record that must list them first cannot be written"); n != 1 {
		t.Errorf("%d held-back lines, want 1", n)
	}
	if got := r.d.Status().Interface.RecordError; got != "read-only file system" {
		t.Errorf("status record_error %q", got)
	}
	rec.fail = nil
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if got := r.d.Status().Interface.RecordError; got != "" {
		t.Errorf("status record_error %q after a good write", got)
	}
	if got := rec.vips(t); got != "10.0.0.100 10.0.0.101 10.0.0.102" {
		t.Errorf("record holds %q", got)
	}
	if n := len(rec.writes); n != 3 {
		t.Errorf("%d writes, want 3 (two failed, one good)", n)
	}
	r.tick(t)
	if n := len(rec.writes); n != 3 {
		t.Errorf("%d writes after it succeeded, want still 3", n)
	}
}

// A hand-added host address is reported once per change of the set, in
// /status; other foreign addresses are not unmanaged VIPs.
func TestUnmanagedAddressesAreReported(t *testing.T) {
	link := newFakeLink("10.0.0.77/32", "10.0.0.1/24", "2001:db8::9/128")
	r, _ := ownRig(t, seed(config.Withdraw), link)
	const msg = "addresses on the interface that rhi does not manage, announced without a health check; left in place (unmanaged_addresses: report)"
	r.tick(t)
	r.tick(t)
	w := r.entries(logrus.WarnLevel, msg)
	if len(w) != 1 || w[0].Data["addresses"] != "10.0.0.77/32 2001:db8::9/128" {
		t.Fatalf("warnings %v", w)
	}
	st := r.d.Status().Interface
	if !slices.Equal(st.Unmanaged, []string{"10.0.0.77/32", "2001:db8::9/128"}) {
		t.Errorf("unmanaged %v", st.Unmanaged)
	}
	r.expect(t, "10.0.0.1 10.0.0.77 10.0.0.100 10.0.0.101 10.0.0.102 2001:db8::9")

	link.do(func(l *fakeLink) { l.addrs[netip.MustParsePrefix("10.0.0.78/32")] = true })
	r.tick(t)
	r.tick(t)
	if w := r.entries(logrus.WarnLevel, msg); len(w) != 2 || w[1].Data["addresses"] != "10.0.0.77/32 10.0.0.78/32 2001:db8::9/128" {
		t.Fatalf("warnings %v", w)
	}
	link.do(func(l *fakeLink) {
		for _, a := range []string{"10.0.0.77/32", "10.0.0.78/32", "2001:db8::9/128"} {
			delete(l.addrs, netip.MustParsePrefix(a))
		}
	})
	r.tick(t)
	if n := len(r.entries(logrus.InfoLevel, "no unmanaged addresses on the interface any more")); n != 1 {
		t.Errorf("%d all-clear lines, want 1", n)
	}
	if got := r.d.Status().Interface.Unmanaged; got != nil {
		t.Errorf("unmanaged %v", got)
	}
}

// unmanaged_addresses: withdraw deletes them on the next tick, and nothing
// else; an address a reload then configures is managed, not withdrawn.
func TestUnmanagedAddressesAreWithdrawn(t *testing.T) {
	link := newFakeLink("10.0.0.77/32", "10.0.0.1/24")
	cfg := seed(config.Withdraw)
	cfg.Unmanaged = "withdraw"
	r, rec := ownRig(t, cfg, link)
	r.tick(t)
	r.expect(t, "10.0.0.1 10.0.0.77 10.0.0.100 10.0.0.101 10.0.0.102")
	r.tick(t)
	r.expect(t, "10.0.0.1 10.0.0.100 10.0.0.101 10.0.0.102")
	if got := r.d.Status().Interface.Unmanaged; got != nil {
		t.Errorf("unmanaged %v after withdrawing", got)
	}
	if got := rec.vips(t); got != "10.0.0.100 10.0.0.101 10.0.0.102" {
		t.Errorf("an unmanaged address entered the record: %q", got)
	}
	if _, ok := r.d.vs.at(netip.MustParsePrefix("10.0.0.77/32")); ok {
		t.Errorf("an unmanaged address got a VIP's bookkeeping")
	}

	// A failed delete keeps it listed until it is gone.
	p := netip.MustParsePrefix("10.0.0.78/32")
	link.do(func(l *fakeLink) { l.addrs[p] = true; l.failDel[p] = true })
	r.tick(t)
	r.tick(t)
	r.tick(t)
	if got := r.d.Status().Interface.Unmanaged; !slices.Equal(got, []string{"10.0.0.78/32"}) {
		t.Errorf("unmanaged %v while its delete fails", got)
	}
	if n := len(r.entries(logrus.WarnLevel, "addresses on the interface that rhi does not manage, announced without a health check; withdrawing them")); n != 2 {
		t.Errorf("%d warnings, want 2 (one per change of the set)", n)
	}

	// A reload that configures it: it is a VIP now, kept as health says.
	next := seed(config.Withdraw)
	next.Unmanaged = "withdraw"
	next.VIPs = append(next.VIPs, vipCfg("10.0.0.78/32", config.All, api))
	r.d.applyReload(next)
	r.tick(t)
	r.tick(t)
	r.expect(t, "10.0.0.1 10.0.0.78 10.0.0.100 10.0.0.101 10.0.0.102")
	if got := r.d.Status().Interface.Unmanaged; got != nil {
		t.Errorf("unmanaged %v after configuring it", got)
	}
}

// BenchmarkDaemonTick10000Owned is BenchmarkDaemonTick10000 with an
// ownership record and an unmanaged address on the interface: in the
// steady state neither may cost a write or an allocation per tick.
func BenchmarkDaemonTick10000Owned(b *testing.B) {
	cfg, keys := manyVIPs(10000)
	snap := health.Snapshot{}
	for _, key := range keys {
		snap[key] = health.Result{Verdict: health.Up, Healthy: 1, Total: 2}
	}
	link := newFakeLink("192.0.2.77/32")
	rec := &fakeRecord{File: owned.File(filepath.Join(b.TempDir(), "owned")), link: link}
	d := New(cfg, Deps{Health: staticHealth(snap), Announcer: link, Record: rec, Now: func() time.Time { return time.Unix(0, 0) }})
	ctx := context.Background()
	d.tick(ctx)
	b.ReportAllocs()
	for b.Loop() {
		d.tick(ctx)
	}
	if len(rec.writes) != 1 || len(d.unmanaged.list) != 1 {
		b.Fatalf("%d record writes, %d unmanaged; want 1 and 1", len(rec.writes), len(d.unmanaged.list))
	}
}

// TestUnmanagedCountsPointToPointPeers: BIRD announces the peer prefix of
// a point-to-point entry, so "10.9.0.1 peer 10.0.0.99/32" is an address
// announced without a health check; loopback and link-local host
// addresses are never announced and are not unmanaged (nor withdrawn).
func TestUnmanagedCountsPointToPointPeers(t *testing.T) {
	link := newFakeLink("::1/128", "127.0.0.2/32", "169.254.7.7/32", "fe80::77/128")
	link.peers = []vip.Peer{{Local: netip.MustParseAddr("10.9.0.1"), Peer: netip.MustParsePrefix("10.0.0.99/32")}}
	cfg := seed(config.Withdraw)
	r, _ := ownRig(t, cfg, link)
	r.tick(t)
	r.tick(t)
	if got := r.d.Status().Interface.Unmanaged; !slices.Equal(got, []string{"10.0.0.99/32"}) {
		t.Errorf("unmanaged %v, want the peer prefix 10.0.0.99/32 alone", got)
	}
	if len(link.peers) != 1 {
		t.Fatalf("unmanaged_addresses: report deleted the point-to-point entry")
	}
	r.d.cfg.Unmanaged = "withdraw"
	r.tick(t)
	if len(link.peers) != 0 {
		t.Errorf("unmanaged_addresses: withdraw left the point-to-point entry %v", link.peers)
	}
	r.tick(t)
	if got := r.d.Status().Interface.Unmanaged; got != nil {
		t.Errorf("unmanaged %v after withdrawing", got)
	}
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102 127.0.0.2 169.254.7.7 ::1 fe80::77")
}

// DeletePeers deletes point-to-point entries as vip.Announcer does.
func (l *fakeLink) DeletePeers(ctx context.Context, peers []vip.Peer) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.peers = slices.DeleteFunc(l.peers, func(q vip.Peer) bool { return slices.Contains(peers, q) })
	return nil
}

// TestDryRunSaysWould: a dry run under unmanaged_addresses: withdraw says
// that it would withdraw, and deletes no point-to-point entry.
func TestDryRunSaysWould(t *testing.T) {
	link := newFakeLink("10.0.0.77/32", "10.0.0.103/32")
	cfg := seed(config.Withdraw)
	cfg.Unmanaged = "withdraw"
	r, _ := ownRig(t, cfg, link, "10.0.0.103/32")
	r.d.env.dryRun = true
	r.d.ann = dryLink{link}
	link.peers = []vip.Peer{{Local: netip.MustParseAddr("10.9.0.1"), Peer: netip.MustParsePrefix("10.0.0.99/32")}}
	r.tick(t)
	r.tick(t)
	if n := r.count(logrus.WarnLevel, "withdrawing"); n != 0 {
		t.Errorf("a dry run logged %d lines saying it is withdrawing", n)
	}
	if n := r.count(logrus.WarnLevel, "would withdraw them"); n != 1 {
		t.Errorf("%d unmanaged warnings saying would, want 1", n)
	}
	if n := r.count(logrus.WarnLevel, "would withdraw it"); n != 1 {
		t.Errorf("%d record warnings saying would, want 1", n)
	}
	if len(link.peers) != 1 {
		t.Errorf("a dry run deleted a point-to-point entry")
	}
}

// dryLink is a fakeLink whose Set and DeletePeers change nothing, as a
// dry run's announcer.
type dryLink struct{ l *fakeLink }

func (d dryLink) Observe(ctx context.Context) (vip.State, error) { return d.l.Observe(ctx) }
func (d dryLink) Set(ctx context.Context, want vip.Desired) (vip.State, error) {
	d.l.mu.Lock()
	defer d.l.mu.Unlock()
	if err := checkDesired(want); err != nil {
		return vip.State{}, err
	}
	return d.l.state(&want), nil
}
func (d dryLink) Renew(ctx context.Context, p netip.Prefix, present bool) error { return nil }
func (d dryLink) DeletePeers(context.Context, []vip.Peer) error                 { return nil }

// TestUnmanagedWarningIsBounded: the warning names the first 100
// unmanaged addresses and counts the rest.
func TestUnmanagedWarningIsBounded(t *testing.T) {
	link := newFakeLink()
	for i := range 150 {
		link.addrs[netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)}), 32)] = true
	}
	r, _ := ownRig(t, seed(config.Withdraw), link)
	r.tick(t)
	w := r.entries(logrus.WarnLevel, "addresses on the interface that rhi does not manage, announced without a health check; left in place (unmanaged_addresses: report)")
	if len(w) != 1 {
		t.Fatalf("%d warnings, want 1", len(w))
	}
	if n := len(strings.Fields(w[0].Data["addresses"].(string))); n != 100 || w[0].Data["count"] != 150 || w[0].Data["not_listed"] != 50 {
		t.Errorf("warning lists %d addresses, count %v, not_listed %v; want 100, 150, 50", n, w[0].Data["count"], w[0].Data["not_listed"])
	}
}

// TestUnwrittenRecordHoldsOnlyNewVIPs: while the record cannot be written,
// a VIP the last record read lists is added as health says, one already on
// the interface stays and is withdrawn when it goes down; only a VIP no
// record lists is held back.
func TestUnwrittenRecordHoldsOnlyNewVIPs(t *testing.T) {
	link := newFakeLink("10.0.0.101/32")
	r, rec := ownRig(t, seed(config.Withdraw), link, "10.0.0.100/32")
	rec.fail = errors.New("read-only file system")
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101")
	if n := r.d.own.held; n != 1 {
		t.Errorf("%d VIPs held back, want 1 (10.0.0.102)", n)
	}
	r.health.set(health.Down, auth)
	r.tick(t)
	r.expect(t, "10.0.0.100") // withdrawals go on
}
