package statushttp

import (
	"context"
	"sync"
	"weak"
)

// maxLiveDocs bounds the rendered documents of one kind (/status, or the
// status part of /metrics) that one handler keeps alive at once for its
// readers: the newest, and an older one that slow readers are still being
// sent. When that many are held and the Source has moved on, a new reader
// is given the newest rendered one (as old as its last_tick says: at
// worst as old as the slowest reader still being sent the other) instead
// of a render of its own: the memory readers can hold is maxLiveDocs
// documents, whatever their number and speed.
const maxLiveDocs = 2

// doc is one rendered document, shared read-only by every reader of it.
type doc struct {
	version uint64 // the Source's StatusVersion when it was rendered
	seq     uint64 // the shared's render count when its render began
	body    []byte
	fams    []span // the families in body (/metrics), in order
	refs    int    // readers sending it; under shared.mu
}

// span is one family's block in a /metrics body.
type span struct {
	name       string
	start, end int
}

// shared hands out the current rendered document to readers: rendered
// once per version of the Source, at most one render at a time (renders),
// at most maxLiveDocs held by readers (see there). Only readers hold a
// document: once the last of them is done, the newest is kept by a weak
// pointer, for readers that come before the collector takes it, so that
// nothing is held between scrapes (~9 MB at 10,000 VIPs).
type shared struct {
	version func() (uint64, bool) // the Source's version; false: not Versioned
	render  func(sizeHint int) *doc
	renders chan struct{} // one slot: the render in progress; shared by the handler's kinds

	mu     sync.Mutex
	newest weak.Pointer[doc] // the last rendered; held strongly by its readers only
	live   int               // docs with refs > 0
	starts uint64            // renders begun
	size   int               // the last document's size, to grow the next one's buffer once
}

// get returns a document at least as new as the Source was when get was
// called, or, when maxLiveDocs documents are held by readers, the newest
// one rendered. release must be called when the reader is done with it.
// It returns an error only when ctx ends while it waits for another
// render.
func (c *shared) get(ctx context.Context) (d *doc, release func(), err error) {
	v, versioned := c.version()
	c.mu.Lock()
	arrived := c.starts
	if d := c.current(v, versioned, arrived); d != nil {
		c.mu.Unlock()
		return d, c.releaser(d), nil
	}
	c.mu.Unlock()

	select {
	case c.renders <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	defer func() { <-c.renders }()
	c.mu.Lock()
	if d := c.current(v, versioned, arrived); d != nil { // rendered while this waited
		c.mu.Unlock()
		return d, c.releaser(d), nil
	}
	c.starts++
	seq, hint := c.starts, c.size
	c.mu.Unlock()

	d = c.render(hint)
	d.version, d.seq = v, seq

	c.mu.Lock()
	defer c.mu.Unlock()
	c.newest = weak.Make(d)
	c.size = len(d.body)
	c.ref(d)
	return d, c.releaser(d), nil
}

// current returns the newest document, with a reference taken, when it
// will do for a reader that came when the Source was at version v and
// starts renders had begun: it is of version v, or its render began after
// the reader came, or too many documents are held for another. Under mu.
//
// The bound holds because a render happens only when fewer than
// maxLiveDocs are held or the newest is gone (then every document held is
// an older one, and at most maxLiveDocs-1 of those are).
func (c *shared) current(v uint64, versioned bool, arrived uint64) *doc {
	d := c.newest.Value()
	if d == nil {
		return nil
	}
	if (versioned && d.version == v) || d.seq > arrived || c.live >= maxLiveDocs {
		c.ref(d)
		return d
	}
	return nil
}

// releaser is the release of one reference to d.
func (c *shared) releaser(d *doc) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.unref(d)
			c.mu.Unlock()
		})
	}
}

// ref takes a reference to d. Under mu.
func (c *shared) ref(d *doc) {
	if d.refs == 0 {
		c.live++
	}
	d.refs++
}

// unref drops one reference to d. Under mu.
func (c *shared) unref(d *doc) {
	d.refs--
	if d.refs == 0 {
		c.live--
	}
}

// held is the number of documents held by readers, for tests.
func (c *shared) held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}
