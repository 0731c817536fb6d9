package daemon

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/owned"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// TestUpstreamLog: a verdict is logged when it first appears and when it
// changes, at the level its meaning calls for; unreadable upstreams are
// counted every poll; a key a reload dropped is forgotten, and logged
// again if it comes back.
func TestUpstreamLog(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	policy := config.FailurePolicy{NoChecker: "healthy"}
	var u upstreamLog
	type line struct {
		Level    logrus.Level
		Upstream string
		Verdict  string
	}
	poll := func(keys []string, snap health.Snapshot) (int, []line) {
		hook.Reset()
		ups := make([]health.Upstream, len(keys))
		for i, k := range keys {
			ups[i] = health.Upstream{Key: k}
		}
		plan := apisix.NewPlan(ups)
		read := map[int]health.Result{}
		n := u.note(log, plan, snap, policy, func(j int, r health.Result) {
			if _, twice := read[j]; twice {
				t.Errorf("resource %d given twice", j)
			}
			read[j] = r
		})
		// Every resource is given its reading under its first key.
		checked := map[int]bool{}
		for i, up := range ups {
			if j, ok := plan.KeyResource(i); ok && !checked[j] {
				if r, given := read[j]; !given || r.Verdict != snap[up.Key].Verdict {
					t.Errorf("resource %d (%s): given %v (%v), want %v", j, up.Key, r.Verdict, given, snap[up.Key].Verdict)
				}
				checked[j] = true
			}
		}
		if len(read) != len(checked) {
			t.Errorf("resources given %v, named by the keys %v", read, checked)
		}
		var got []line
		for _, e := range hook.AllEntries() {
			got = append(got, line{e.Level, e.Data["upstream"].(string), e.Data["verdict"].(string)})
		}
		return n, got
	}
	keys := []string{"a", "b", "c"}
	steps := []struct {
		name       string
		keys       []string
		snap       health.Snapshot
		unreadable int
		lines      []line
	}{
		{"first poll logs every verdict", keys,
			health.Snapshot{"a": {Verdict: health.Up}, "b": {Verdict: health.NoChecker}, "c": {Verdict: health.Failed, Err: errors.New("refused")}},
			1, []line{{logrus.InfoLevel, "a", "up"}, {logrus.WarnLevel, "b", "no_checker"}, {logrus.WarnLevel, "c", "failed"}}},
		{"the same verdicts log nothing, still count", keys,
			health.Snapshot{"a": {Verdict: health.Up}, "b": {Verdict: health.NoChecker}, "c": {Verdict: health.Failed}},
			1, nil},
		{"a change logs that upstream only", keys,
			health.Snapshot{"a": {Verdict: health.Down}, "b": {Verdict: health.NoChecker}, "c": {Verdict: health.NotFound}},
			1, []line{{logrus.InfoLevel, "a", "down"}, {logrus.WarnLevel, "c", "not_found"}}},
		{"a dropped key is forgotten", []string{"a", "b"},
			health.Snapshot{"a": {Verdict: health.Down}, "b": {Verdict: health.NoChecker}},
			0, nil},
		{"and logged again when it comes back", keys,
			health.Snapshot{"a": {Verdict: health.Down}, "b": {Verdict: health.NoChecker}, "c": {Verdict: health.NotFound}},
			1, []line{{logrus.WarnLevel, "c", "not_found"}}},
		{"two spellings of one resource are one upstream", []string{"/upstreams/1", "/apisix/upstreams/1"},
			health.Snapshot{"/upstreams/1": {Verdict: health.Failed}, "/apisix/upstreams/1": {Verdict: health.Failed}},
			1, []line{{logrus.WarnLevel, "/upstreams/1", "failed"}}},
		{"and change once", []string{"/upstreams/1", "/apisix/upstreams/1"},
			health.Snapshot{"/upstreams/1": {Verdict: health.Up}, "/apisix/upstreams/1": {Verdict: health.Up}},
			0, []line{{logrus.InfoLevel, "/upstreams/1", "up"}}},
	}
	for _, s := range steps {
		n, got := poll(s.keys, s.snap)
		if n != s.unreadable {
			t.Errorf("%s: %d unreadable, want %d", s.name, n, s.unreadable)
		}
		if diff := cmp.Diff(s.lines, got); diff != "" {
			t.Errorf("%s: lines (-want +got):\n%s", s.name, diff)
		}
	}
}

// TestPollStats: totals only grow; the runs of failed and of unsettled
// polls end with the first good one; settledAt is the end of the last
// poll that settled a VIP.
func TestPollStats(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var s pollStats
	s.polled(0)
	s.settled(true, t0)
	s.polled(2)
	s.settled(false, t0.Add(time.Second))
	s.polled(1)
	s.settled(false, t0.Add(2*time.Second))
	want := pollStats{polls: 3, failedAll: 2, failed: 2, unreadable: 1, unsettled: 2, settledAt: t0}
	if s != want {
		t.Fatalf("after a good poll and two failed ones: %+v, want %+v", s, want)
	}
	s.polled(0)
	s.settled(true, t0.Add(3*time.Second))
	want = pollStats{polls: 4, failedAll: 2, settledAt: t0.Add(3 * time.Second)}
	if s != want {
		t.Fatalf("after a good poll again: %+v, want %+v", s, want)
	}
}

// TestIfaceWrites: an error is news once, until another one comes; a
// successful write clears it and says so once; the total counts failed
// writes, the run failed ticks, and a read error counts in neither.
func TestIfaceWrites(t *testing.T) {
	var w ifaceWrites
	eperm, ebusy := errors.New("operation not permitted"), errors.New("device or resource busy")
	check := func(step string, gotNews, wantNews, gotCleared, wantCleared bool, want ifaceWrites) {
		t.Helper()
		if gotNews != wantNews || gotCleared != wantCleared || w != want {
			t.Errorf("%s: news %v cleared %v state %+v; want news %v cleared %v state %+v", step, gotNews, gotCleared, w, wantNews, wantCleared, want)
		}
	}
	news := w.noteErr(eperm)
	check("a read error", news, true, false, false, ifaceWrites{err: eperm.Error()})
	news, cleared := w.wrote(eperm)
	w.ticked(eperm)
	check("the same error from a write", news, false, cleared, false, ifaceWrites{err: eperm.Error(), failed: 1, run: 1})
	news, cleared = w.wrote(ebusy)
	check("another error from a repair", news, true, cleared, false, ifaceWrites{err: ebusy.Error(), failed: 2, run: 1})
	news, cleared = w.wrote(ebusy)
	w.ticked(ebusy)
	check("the same error again", news, false, cleared, false, ifaceWrites{err: ebusy.Error(), failed: 3, run: 2})
	news, cleared = w.wrote(nil)
	w.ticked(nil)
	check("a good write", news, false, cleared, true, ifaceWrites{failed: 3})
	news, cleared = w.wrote(nil)
	check("another good write", news, false, cleared, false, ifaceWrites{failed: 3})
}

// TestViews: readers see nothing before the first publish, then the last
// view published; the loop refills the view published two swaps ago,
// never the one readers see.
func TestViews(t *testing.T) {
	var vs views
	vs.read(func(v *view) {
		if v != nil {
			t.Errorf("before any publish: %+v", v)
		}
	})
	a := vs.next()
	a.drainErr = "a"
	vs.publish(a)
	b := vs.next()
	if b == a {
		t.Fatal("next returned the published view")
	}
	b.drainErr = "b"
	vs.publish(b)
	vs.read(func(v *view) {
		if v != b {
			t.Errorf("read %q, want the view published last", v.drainErr)
		}
	})
	if c := vs.next(); c != a {
		t.Errorf("next after two publishes is not the first view, reused")
	}
}

// TestStatusVersionGrowsAtPublish: each tick's publish gives the status
// a new version, which the status handlers render anew.
func TestStatusVersionGrowsAtPublish(t *testing.T) {
	r := newRig(t, seed(config.Withdraw), newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	v0, ok := r.d.StatusVersion()
	if !ok {
		t.Fatal("the daemon says it has no version")
	}
	r.d.tick(context.Background())
	v1, _ := r.d.StatusVersion()
	r.d.tick(context.Background())
	v2, _ := r.d.StatusVersion()
	if v1 <= v0 || v2 <= v1 {
		t.Errorf("versions %d, %d, %d across two ticks: want each larger", v0, v1, v2)
	}
}

// TestViewsPublishNeverWaits: a reader in the middle of reading a view
// does not hold up publish, and the view it reads is not handed out for
// refilling until it is done.
func TestViewsPublishNeverWaits(t *testing.T) {
	var vs views
	a := vs.next()
	vs.publish(a)
	reading, done := make(chan struct{}), make(chan struct{})
	go vs.read(func(v *view) {
		close(reading)
		<-done // a slow render
	})
	<-reading
	b := vs.next()
	vs.publish(b) // does not wait for the reader
	if c := vs.next(); c == a {
		t.Fatal("next handed out the view a reader is reading")
	}
	if vs.pubs.Load() != 2 {
		t.Errorf("%d publishes counted, want 2", vs.pubs.Load())
	}
	close(done)
}

// TestOwnershipSave: a written record is clean; a failing write leaves it
// dirty, logs once per change of error and is reported until a write
// succeeds, which is logged once; without a record nothing is written and
// nothing stays dirty.
func TestOwnershipSave(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	rec := &fakeRecord{File: owned.File(filepath.Join(t.TempDir(), "owned")), link: newFakeLink()}
	o := ownership{file: rec, dirty: true}
	r := owned.Record{Iface: "rhi0", VIPs: []netip.Prefix{netip.MustParsePrefix("10.0.0.100/32")}}
	errorLines := func() int { return len(entriesAt(hook, logrus.ErrorLevel)) }

	rec.fail = syscall.EROFS
	o.save(r, log)
	o.save(r, log)
	if !o.dirty || o.err != syscall.EROFS.Error() || errorLines() != 1 {
		t.Fatalf("two failed writes: dirty %v, err %q, %d error lines; want dirty, the error, 1 line", o.dirty, o.err, errorLines())
	}
	rec.fail = syscall.ENOSPC
	o.save(r, log)
	if o.err != syscall.ENOSPC.Error() || errorLines() != 2 {
		t.Fatalf("another error: err %q, %d error lines; want it and 2 lines", o.err, errorLines())
	}
	rec.fail = nil
	o.save(r, log)
	if o.dirty || o.err != "" || len(rec.writes) != 4 || rec.vips(t) != "10.0.0.100" {
		t.Fatalf("a good write: dirty %v, err %q, %d writes, record %q", o.dirty, o.err, len(rec.writes), rec.vips(t))
	}
	if n := len(entriesAt(hook, logrus.InfoLevel)); n != 1 {
		t.Errorf("the first good write after errors logged %d info lines, want 1", n)
	}

	none := ownership{dirty: true}
	none.save(r, log)
	if none.dirty {
		t.Error("without a record, save left the record dirty")
	}
}

// entriesAt returns the log lines at exactly level.
func entriesAt(hook *logtest.Hook, level logrus.Level) []*logrus.Entry {
	var out []*logrus.Entry
	for _, e := range hook.AllEntries() {
		if e.Level == level {
			out = append(out, e)
		}
	}
	return out
}

// TestUnmanagedAddrs: the foreign host addresses are unmanaged, in order;
// a network or a mapped address is not; one listed stays listed while it
// is on the interface unmanaged (its withdrawal failed) and goes when it
// leaves or is managed; an update that finds the same list reports no
// change and does not replace it.
func TestUnmanagedAddrs(t *testing.T) {
	pfx := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	managed := map[netip.Prefix]bool{}
	isManaged := func(p netip.Prefix) bool { return managed[p] }
	var u unmanagedAddrs
	steps := []struct {
		name    string
		st      vip.State
		changed bool
		want    []netip.Prefix
	}{
		{"host addresses only", vip.State{Foreign: pfx("192.0.2.9/32", "192.0.2.0/24", "2001:db8::9/128", "::ffff:192.0.2.1/128", "192.0.2.7/32")},
			true, pfx("192.0.2.7/32", "192.0.2.9/32", "2001:db8::9/128")},
		{"the same again", vip.State{Foreign: pfx("192.0.2.7/32", "192.0.2.9/32", "2001:db8::9/128")}, false, pfx("192.0.2.7/32", "192.0.2.9/32", "2001:db8::9/128")},
		{"deleted as unmanaged, still there: the delete failed", vip.State{Present: pfx("192.0.2.7/32"), Foreign: pfx("192.0.2.9/32")},
			true, pfx("192.0.2.7/32", "192.0.2.9/32")},
		{"gone", vip.State{Foreign: pfx("192.0.2.9/32")}, true, pfx("192.0.2.9/32")},
		{"none", vip.State{}, true, nil},
	}
	var before []netip.Prefix
	for _, s := range steps {
		if got := u.update(s.st, isManaged); got != s.changed {
			t.Errorf("%s: changed %v, want %v", s.name, got, s.changed)
		}
		if !slices.Equal(u.list, s.want) {
			t.Errorf("%s: list %v, want %v", s.name, u.list, s.want)
		}
		if !s.changed && len(before) > 0 && &before[0] != &u.list[0] {
			t.Errorf("%s: an unchanged list was replaced", s.name)
		}
		before = u.list
	}
	// Managed (configured or being withdrawn): not unmanaged, even if listed.
	u.update(vip.State{Foreign: pfx("192.0.2.7/32")}, isManaged)
	managed[netip.MustParsePrefix("192.0.2.7/32")] = true
	if u.update(vip.State{Present: pfx("192.0.2.7/32")}, isManaged); u.list != nil {
		t.Errorf("a managed address is still listed: %v", u.list)
	}
}
