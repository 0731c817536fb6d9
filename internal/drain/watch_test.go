package drain

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/safefile"
)

// guard fails the test if f has not returned in a long time: what it
// guards against is blocking for ever (a FIFO), not slowness.
func guard(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadFIFO: a FIFO at the drain path is an error at once; an open that
// waits for a writer would hang `rhi drain` and the daemon.
func TestReadFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drain")
	mkfifo(t, path)
	var err error
	guard(t, "Read of a FIFO", func() { _, err = Read(path) })
	if !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("Read of a FIFO: %v, want a not-a-regular-file error", err)
	}
}

// TestReadSymlink: a link planted at the drain path is not followed.
func TestReadSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "drain")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	s, err := Read(path)
	if !errors.Is(err, safefile.ErrNotRegular) {
		t.Errorf("Read through a symbolic link: %+v, %v; want a not-a-regular-file error", s, err)
	}
}

func TestReadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drain")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, maxSize+1); err != nil { // sparse: costs nothing
		t.Fatal(err)
	}
	if _, err := Read(path); !errors.Is(err, safefile.ErrTooLarge) {
		t.Errorf("Read of a file over the limit: %v, want ErrTooLarge", err)
	}
}

// countingWatcher counts the looks that read the file (not the ones
// that only compared its stamp).
func countingWatcher(path string) (*Watcher, *int) {
	w := NewWatcher(path)
	reads := 0
	w.look = func(p string, last Stamp, valid bool) result {
		r := look(p, last, valid)
		if !r.same {
			reads++
		}
		return r
	}
	return w, &reads
}

func write(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil { // a new inode: a new stamp
		t.Fatal(err)
	}
}

// TestWatcherBadFileOncePerStamp: a bad file is read and reported once per
// change of its stamp, however often the watcher looks, and the drains read
// before it stay in force.
func TestWatcherBadFileOncePerStamp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drain")
	write(t, path, "10.0.0.1\n")
	w, reads := countingWatcher(path)
	ctx := context.Background()
	u, ok := w.Check(ctx)
	if !ok || u.Err != nil || !u.Set.Has(pfx("10.0.0.1/32")) || u.Path != path {
		t.Fatalf("first look: %+v, %v", u, ok)
	}
	if _, ok := w.Check(ctx); ok {
		t.Fatal("an unchanged file gave a second update")
	}

	write(t, path, "10.0.0.1\nbanana\n")
	updates := 0
	for range 40 { // ten seconds of looks at 250 ms
		u, ok := w.Check(ctx)
		if !ok {
			continue
		}
		updates++
		if u.Err == nil || !strings.Contains(u.Err.Error(), `"banana"`) {
			t.Errorf("bad file: err = %v", u.Err)
		}
		if !u.Set.Has(pfx("10.0.0.1/32")) {
			t.Errorf("bad file: the drains in force were forgotten: %+v", u.Set)
		}
	}
	if updates != 1 || *reads != 2 {
		t.Errorf("bad file: %d updates and %d reads in all, want 1 and 2", updates, *reads)
	}

	write(t, path, "banana\nbanana\n") // still bad, but another version
	if u, ok := w.Check(ctx); !ok || u.Err == nil {
		t.Errorf("changed bad file: %+v, %v; want reported again", u, ok)
	}
	write(t, path, "10.0.0.2\n")
	u, ok = w.Check(ctx)
	if !ok || u.Err != nil || u.Set.Has(pfx("10.0.0.1/32")) || !u.Set.Has(pfx("10.0.0.2/32")) {
		t.Errorf("fixed file: %+v, %v", u, ok)
	}
	if *reads != 4 {
		t.Errorf("%d reads, want 4 (one per version)", *reads)
	}
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// TestWatcherRefusesSpecialFiles: a FIFO, a symbolic link or a directory at
// the path is reported once, never opened, and the drains stay.
func TestWatcherRefusesSpecialFiles(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, path string){
		"fifo": func(t *testing.T, path string) { mkfifo(t, path) },
		"symlink": func(t *testing.T, path string) {
			if err := os.Symlink("/etc/passwd", path); err != nil {
				t.Fatal(err)
			}
		},
		"directory": func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "drain")
			write(t, path, "all\n")
			w := NewWatcher(path)
			ctx := context.Background()
			w.Check(ctx)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			plant(t, path)
			var u Update
			var ok bool
			guard(t, "Check", func() { u, ok = w.Check(ctx) })
			if !ok || !errors.Is(u.Err, safefile.ErrNotRegular) || !u.Set.All {
				t.Fatalf("%s at the path: %+v, %v; want not-a-regular-file, all still drained", name, u, ok)
			}
			guard(t, "Check", func() { _, ok = w.Check(ctx) })
			if ok {
				t.Errorf("%s reported twice", name)
			}
		})
	}
}

// TestWatcherHungLook: a look past its deadline is reported once with the
// drains in force, no second look starts while it runs, and when it ends
// the file's state is sent again.
func TestWatcherHungLook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drain")
	write(t, path, "all\n")
	w := NewWatcher(path)
	ctx := context.Background()
	if u, ok := w.Check(ctx); !ok || !u.Set.All {
		t.Fatalf("first look: %+v, %v", u, ok)
	}
	release := make(chan struct{})
	looks := 0
	w.look = func(p string, last Stamp, valid bool) result {
		looks++
		<-release
		return look(p, last, valid)
	}
	deadline := make(chan time.Time)
	w.after = func(d time.Duration) <-chan time.Time {
		if d != Timeout {
			t.Errorf("deadline %v, want %v", d, Timeout)
		}
		return deadline
	}
	close(deadline) // the deadline has passed
	u, ok := w.Check(ctx)
	if !ok || u.Err == nil || !strings.Contains(u.Err.Error(), "no answer within") || !u.Set.All {
		t.Fatalf("hung look: %+v, %v", u, ok)
	}
	for range 3 {
		if u, ok := w.Check(ctx); ok {
			t.Fatalf("look still running: %+v", u)
		}
	}
	close(release)
	w.after = func(time.Duration) <-chan time.Time { return nil } // no deadline: wait for the look
	got, ok := w.Check(ctx)
	if !ok || got.Err != nil || !got.Set.All {
		t.Errorf("after the hung look returned: %+v, %v; want the file's set, no error", got, ok)
	}
	if looks != 1 {
		t.Errorf("%d looks started, want 1 (never two at a time)", looks)
	}
}

// TestWatcherRun: Run sends the file's state at once, looks again at each
// tick of the injected ticker, and follows a new path.
func TestWatcherRun(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	write(t, a, "10.0.0.1\n")
	write(t, b, "10.0.0.2\n")
	w := NewWatcher(a)
	tick := make(chan time.Time)
	out := make(chan Update)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx, tick, out); close(done) }()
	if u := <-out; u.Path != a || !u.Set.Has(pfx("10.0.0.1/32")) {
		t.Errorf("first update: %+v", u)
	}
	write(t, a, "10.0.0.3\n")
	tick <- time.Time{}
	if u := <-out; !u.Set.Has(pfx("10.0.0.3/32")) {
		t.Errorf("after a tick: %+v", u)
	}
	w.SetPath(b)
	if u := <-out; u.Path != b || !u.Set.Has(pfx("10.0.0.2/32")) || u.Set.Has(pfx("10.0.0.3/32")) {
		t.Errorf("after SetPath: %+v", u)
	}
	cancel()
	<-done
}

func TestWatcherNoFile(t *testing.T) {
	for _, path := range []string{"", filepath.Join(t.TempDir(), "missing")} {
		w := NewWatcher(path)
		u, ok := w.Check(context.Background())
		if !ok || u.Err != nil || !u.Set.Empty() {
			t.Errorf("%q: %+v, %v; want an empty set", path, u, ok)
		}
		if _, ok := w.Check(context.Background()); ok {
			t.Errorf("%q: a second update", path)
		}
	}
}

// BenchmarkLookBadFile is one look of the watcher at an unchanged 4 MiB
// drain file with a bad last line: an lstat, where it
// used to be a read and a parse of the 4 MiB every 250 ms.
func BenchmarkLookBadFile(b *testing.B) {
	path := badBigFile(b)
	w := NewWatcher(path)
	ctx := context.Background()
	if u, ok := w.Check(ctx); !ok || u.Err == nil {
		b.Fatalf("first look: %+v, %v", u, ok)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, ok := w.Check(ctx); ok {
			b.Fatal("an unchanged bad file reported again")
		}
	}
}

// BenchmarkReadBadFile is what every look cost before: Read of that file.
func BenchmarkReadBadFile(b *testing.B) {
	path := badBigFile(b)
	for b.Loop() {
		if _, err := Read(path); err == nil {
			b.Fatal("bad file read")
		}
	}
}

func badBigFile(b *testing.B) string {
	b.Helper()
	var buf strings.Builder
	for i := 0; buf.Len() < maxSize-100; i++ {
		fmt.Fprintf(&buf, "10.%d.%d.%d\n", i>>16&255, i>>8&255, i&255)
	}
	buf.WriteString("banana\n")
	path := filepath.Join(b.TempDir(), "drain")
	if err := os.WriteFile(path, []byte(buf.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// TestUnreadFileAtStartIsAll: a file that cannot be used before any
// version of it was read stands for "all" (Unread), and the first good
// read decides; a missing file at start is read fine (nothing drained).
func TestUnreadFileAtStartIsAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drain")
	if err := os.WriteFile(path, []byte("10.0.0.1\nbanana\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := NewWatcher(path)
	u, ok := w.Check(context.Background())
	if !ok || u.Err == nil || !u.Unread || !u.Set.All {
		t.Fatalf("bad file at start: %+v, want an error, Unread and all", u)
	}
	if err := os.WriteFile(path, []byte("10.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u, ok = w.Check(context.Background())
	if !ok || u.Err != nil || u.Unread || u.Set.All || !u.Set.Has(pfx("10.0.0.1/32")) {
		t.Fatalf("good file: %+v", u)
	}
	if err := os.WriteFile(path, []byte("banana\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u, ok = w.Check(context.Background())
	if !ok || u.Err == nil || u.Unread || u.Set.All || !u.Set.Has(pfx("10.0.0.1/32")) {
		t.Fatalf("bad file after a good one: %+v, want the last good set", u)
	}

	m := NewWatcher(filepath.Join(t.TempDir(), "missing"))
	if u, ok := m.Check(context.Background()); !ok || u.Err != nil || u.Unread || !u.Set.Empty() {
		t.Errorf("missing file at start: %+v, want nothing drained", u)
	}
}
