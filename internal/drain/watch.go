package drain

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/rhi-daemon/rhi/internal/safefile"
)

// Every is how often the daemon's watcher looks at the drain file: an lstat,
// and a read only when that changed.
const Every = 250 * time.Millisecond

// Timeout bounds one look at the drain file (lstat and read). A look that
// takes longer (a hung network file system) is reported, and the next one
// starts only once it has returned.
const Timeout = 2 * time.Second

// Stamp identifies a version of the drain file without reading it: what
// lstat says of the path itself (a symbolic link is never followed).
type Stamp struct {
	Exist bool
	Type  fs.FileMode // the type bits: a regular file, a FIFO, a link...
	Mod   int64       // mtime, ns
	Size  int64
	Dev   uint64
	Ino   uint64
	Err   string // lstat failed other than with ENOENT
}

// StampOf lstats path.
func StampOf(path string) Stamp {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Stamp{}
	}
	if err != nil {
		return Stamp{Err: err.Error()}
	}
	st := Stamp{Exist: true, Type: fi.Mode().Type(), Mod: fi.ModTime().UnixNano(), Size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Dev, st.Ino = uint64(sys.Dev), sys.Ino
	}
	return st
}

// Update is what a Watcher hands the daemon when the drain file changed.
type Update struct {
	Path string
	// Set is the drain set in force: the file's or, when the file cannot
	// be used, the last one read from it (forgetting a drain would put a
	// VIP under maintenance back into service). When none was ever read
	// (the file is unusable since start-up), it is "all": every VIP
	// drained, since the drains the file holds cannot be known. A missing
	// file is read fine: nothing drained.
	Set Set
	// Err says why the file cannot be used; nil when Set is the file's.
	Err error
	// Unread says that no version of the file was ever read, so Set is the
	// "all" that stands in for it (with Err set).
	Unread bool
}

// Watcher watches the drain file off the daemon's loop: the loop does no
// file I/O for the drain, it takes Updates from a channel. A file is read
// again only when its Stamp changed, so a bad file is reported once per
// change, not once per look.
//
// Check and Run are for one goroutine; SetPath may be called from any.
type Watcher struct {
	paths chan string
	after func(time.Duration) <-chan time.Time
	look  func(path string, last Stamp, valid bool) result

	path    string
	seen    Stamp // of the last look that returned
	looked  bool  // seen is valid
	good    Set   // the last set read; "all" until one is (unread)
	unread  bool  // no version of the file was read yet
	lastErr error // of the last look that returned
	pending chan result
	hung    bool // the last Update reported a look past its deadline
}

// result is what one look at the file found.
type result struct {
	stamp Stamp
	same  bool // stamp equals the last one: not read
	set   Set
	err   error
}

// NewWatcher watches path; "" is no drain file, an empty set.
func NewWatcher(path string) *Watcher {
	return &Watcher{paths: make(chan string, 1), after: time.After, look: look, path: path, good: Set{All: true, VIPs: map[netip.Prefix]bool{}}, unread: true}
}

// SetPath makes the watcher watch path instead (a reload changed
// drain_file). It never blocks.
func (w *Watcher) SetPath(path string) {
	for {
		select {
		case w.paths <- path:
			return
		default:
		}
		select {
		case <-w.paths:
		default:
		}
	}
}

// Run looks at the file at once, then at every tick, and sends each Update
// to out until ctx is done.
func (w *Watcher) Run(ctx context.Context, tick <-chan time.Time, out chan<- Update) {
	for {
		if u, ok := w.Check(ctx); ok {
			select {
			case out <- u:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case p := <-w.paths:
			w.switchTo(p)
		}
	}
}

func (w *Watcher) switchTo(path string) {
	if path == w.path {
		return
	}
	// A look still running at the old path is left to finish on its own.
	w.path, w.looked, w.pending, w.hung = path, false, nil, false
}

// Check looks at the file once, waiting at most Timeout, and returns an
// Update if anything changed since the last one: the file's stamp, or a
// look that did not finish in time. While a look is past its deadline no
// other starts: Check waits for that one again (Timeout at most).
func (w *Watcher) Check(ctx context.Context) (Update, bool) {
	select {
	case p := <-w.paths:
		w.switchTo(p)
	default:
	}
	ch, again := w.pending, w.pending != nil
	if !again { // else a look past its deadline, reported: wait for it, never start two
		ch = make(chan result, 1)
		path, last, valid := w.path, w.seen, w.looked
		go func() { ch <- w.look(path, last, valid) }()
	}
	select {
	case l := <-ch:
		w.pending = nil
		return w.take(l)
	case <-ctx.Done():
		w.pending = ch
		return Update{}, false
	case <-w.after(Timeout):
		w.pending = ch
		if again {
			return Update{}, false
		}
		w.hung = true
		err := fmt.Errorf("drain file %q: no answer within %v", w.path, Timeout)
		return Update{Path: w.path, Set: w.good, Err: err, Unread: w.unread}, true
	}
}

// take records a finished look and says what to hand the loop.
func (w *Watcher) take(l result) (Update, bool) {
	hung := w.hung
	w.hung = false
	if l.same && !hung {
		return Update{}, false
	}
	if !l.same {
		w.seen, w.looked, w.lastErr = l.stamp, true, l.err
		if l.err == nil {
			w.good, w.unread = l.set, false
		}
	}
	// After a hung look the state before it is sent again, even unchanged,
	// since the last Update said the file could not be read.
	return Update{Path: w.path, Set: w.good, Err: w.lastErr, Unread: w.unread && w.lastErr != nil}, true
}

// look stats path and, unless its stamp is last (and valid says last is
// valid), reads it. Only a regular file is opened.
func look(path string, last Stamp, valid bool) result {
	if path == "" {
		return result{same: valid, set: Set{VIPs: map[netip.Prefix]bool{}}}
	}
	st := StampOf(path)
	if valid && st == last {
		return result{stamp: st, same: true}
	}
	l := result{stamp: st}
	switch {
	case st.Err != "":
		l.err = fmt.Errorf("drain file: lstat %s: %s", path, st.Err)
	case !st.Exist:
		l.set = Set{VIPs: map[netip.Prefix]bool{}}
	case !st.Type.IsRegular():
		l.err = fmt.Errorf("drain file %q: %w (%s): not opened", path, safefile.ErrNotRegular, typeName(st.Type))
	default:
		l.set, l.err = Read(path)
	}
	return l
}

func typeName(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDevice != 0:
		return "a device"
	case t.IsDir():
		return "a directory"
	}
	return "type " + t.String()
}
