package apisix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rhi-daemon/rhi/internal/health"
)

// listed is what a list says about one resource a poll asks for: the
// Result its entry gives, and how many entries named the resource (more
// than one is ambiguous).
type listed struct {
	res     health.Result
	entries int
}

// listLimits bound the decoding of one list.
type listLimits struct {
	bytes      int64 // the whole body
	entries    int   // entries of any name
	entryBytes int64 // how far the decoder may read past an entry's start
}

var (
	// errV2List reports a list in the 2.x–3.2 format, which is not used
	// (see ModeList).
	errV2List = errors.New("list in the 2.x-3.2 format holds only the answering worker's checkers")
	// errListTooLarge reports a list over one of its listLimits.
	errListTooLarge = errors.New("list too large")
)

// decodeHealthList reads a 200 body of GET /v1/healthcheck in the 3.3+
// format, an array of {"name","type","nodes"} entries, as it arrives. It
// keeps only the entries whose resource ("<type>/<id>", the last two
// segments of the name) is in want, each as the Result of its nodes; nil
// want keeps every resource a key can name. So its memory is the decoder's
// buffer, which holds about one entry, plus the entries asked for, however
// long the list.
//
// An empty list arrives as {} in every released version, as [] in the
// newest code, or as null. Entries whose name is not a resource key a
// config can hold are skipped; an entry without a string name, or a body
// of another shape, is an error, as is a 2.x–3.2 list (errV2List), a list
// over lim (errListTooLarge), and ctx ending, which is checked as the
// entries go by.
func decodeHealthList(ctx context.Context, r io.Reader, want map[string]Ref, lim listLimits) (map[Ref]listed, error) {
	return decodeList(ctx, r, want, lim, listBufSize)
}

// decodeList is decodeHealthList with a read buffer of bufSize bytes to
// start with (tests make it tiny).
func decodeList(ctx context.Context, r io.Reader, want map[string]Ref, lim listLimits, bufSize int) (map[Ref]listed, error) {
	e := listEntry{want: want, out: make(map[Ref]listed, len(want))}
	if isList, err := readList(ctx, r, &e, lim, bufSize); !isList {
		return nil, err
	}
	return e.out, nil
}

// decodeListJobs is decodeHealthList for a poll: it keeps the entries
// whose resource is one of plan's, and what the list says of plan's
// resource j is in jobs[j].res, with jobs[j].listed the number of entries
// that named it. It takes no map of names and makes no map out: at 10,000
// upstreams the two were a tenth of a poll's CPU (BENCHMARKS.md).
// On an error, what it wrote to jobs is meaningless. It also returns how
// many entries the list held (the checkers APISIX has, which is what the
// list costs APISIX to build) and the body's bytes, as far as it read them.
func decodeListJobs(ctx context.Context, r io.Reader, plan *Plan, jobs []job, lim listLimits) (entries int, bytes int64, err error) {
	e := listEntry{jobs: plan, found: jobs}
	_, err = readList(ctx, r, &e, lim, listBufSize)
	return e.n, e.bytes, err
}

// readList reads a list into e, entry by entry. isList is false on an
// error, and for an empty list sent as {} or null.
func readList(ctx context.Context, r io.Reader, e *listEntry, lim listLimits, bufSize int) (isList bool, err error) {
	m := &meter{r: r, limit: lim.bytes, entryLimit: lim.entryBytes}
	defer func() { e.bytes = m.n }()
	lr := &listReader{m: m, buf: make([]byte, max(bufSize, 1))}
	c, err := lr.peek()
	if err != nil {
		return false, fmt.Errorf("decode: %w", noEOF(err))
	}
	if c != '[' {
		if err := lr.emptyList(c); err != nil {
			return false, fmt.Errorf("decode: %w", err)
		}
		return false, nil
	}
	lr.pos++
	for n := 0; ; n++ {
		c, err := lr.peek()
		if err != nil || c == ']' || c == '}' {
			break
		}
		if n == lim.entries {
			return false, fmt.Errorf("%w: more than %d entries", errListTooLarge, lim.entries)
		}
		if n%256 == 0 && ctx.Err() != nil {
			return false, fmt.Errorf("decode: stopped after %d entries: %w", n, context.Cause(ctx))
		}
		m.mark = lr.offset()
		if err := lr.entry(n, e); err != nil {
			return false, fmt.Errorf("decode: entry %d: %w", n, err)
		}
		e.n = n + 1
		if e.v2 {
			return false, errV2List
		}
	}
	if err := lr.finish(']'); err != nil {
		return false, fmt.Errorf("decode: %w", err)
	}
	return true, nil
}

// entry reads the list's entry n, after the comma that precedes it but
// the first, into e.
func (r *listReader) entry(n int, e *listEntry) error {
	if n > 0 {
		if c := r.buf[r.pos]; c != ',' {
			return syntaxError(c, "after array element")
		}
		r.pos++
	}
	b, err := r.value()
	if err != nil {
		return err
	}
	return e.UnmarshalJSON(b)
}

// emptyList accepts the rest of a body that starts with c and is not an
// array only if it is an empty list: {} or null.
func (r *listReader) emptyList(c byte) error {
	switch c {
	case '{':
		r.pos++
		c, err := r.peek()
		if err != nil {
			return noEOF(err)
		}
		if c == '"' { // encoding/json reads the key first, as a value
			if _, err := r.value(); err != nil {
				return err
			}
		}
		if c != '}' {
			return errors.New("body is a non-empty object, not a list")
		}
		return r.finish('}')
	case 'n':
		if err := r.literal("null"); err != nil {
			return err
		}
		return r.finish(0)
	}
	b, err := r.value()
	if err != nil {
		return err
	}
	return fmt.Errorf("body is %s, not a list", kindOf(b))
}

// finish consumes the closing delim of the top-level value (none when 0) and
// checks that nothing but JSON whitespace follows it.
func (r *listReader) finish(delim byte) error {
	if delim != 0 {
		c, err := r.peek()
		switch {
		case err != nil:
			return noEOF(err)
		case c != delim:
			return syntaxError(c, "after array element")
		}
		r.pos++
	}
	c, err := r.peek()
	switch {
	case err == io.EOF:
		return nil
	case err != nil:
		return err
	case c != '[' && c != '{': // encoding/json reads a scalar in full
		if _, err := r.value(); err != nil {
			return err
		}
	}
	return fmt.Errorf("data after the top-level value (%q)", c)
}

// listEntry decodes one entry of the list in place, in the decoder's
// buffer, and records it in out if want holds its resource; or, when jobs
// is set (a poll), in found[j] if it is the plan's resource j.
type listEntry struct {
	want  map[string]Ref // by resource name, "<type>/<id>"
	out   map[Ref]listed
	jobs  *Plan  // replaces want and out when set
	found []job  // by the plan's resource
	v2    bool   // an entry had a key only 2.x–3.2 sends
	n     int    // entries read
	bytes int64  // of the body, read so far
	w     walker // reused: one allocated per entry would be most of a poll's allocations
}

func (e *listEntry) UnmarshalJSON(b []byte) error {
	e.w = walker{b: b}
	w := &e.w
	if w.peek() != '{' {
		return fmt.Errorf("%s, not an object", kindOf(b))
	}
	var name []byte // quoted
	var esc bool
	var nodes []byte
	var res health.Result // of nodes, when read in place
	var read bool
	err := w.object(bodyKeys, func(k int) error {
		var err error
		switch k {
		case keyName:
			if w.peek() == '"' {
				name, esc, err = w.str()
			} else {
				err = w.skip()
			}
		case keyNodes:
			// Nearly always an array of nodes: read it as it goes by,
			// rather than skip it and read it again. Anything else, and
			// a list that is Failed, is taken raw and read as before.
			start := w.i
			if w.peek() == '[' {
				if res = decodeV3At(w); res.Verdict != health.Failed {
					read = true
					return nil
				}
				w.i = start
			}
			nodes, err = w.raw()
		case keyHealthyNodes, keySrcType, keySrcID:
			e.v2 = true
			err = w.skip()
		default:
			err = w.skip()
		}
		return err
	})
	switch {
	case err != nil:
		return err
	case e.v2:
		return nil
	case name == nil:
		return errors.New(`"name" missing or not a string`)
	}
	ref, j, ok, err := e.lookup(name, esc)
	if err != nil || !ok {
		return err
	}
	if !read {
		res = decodeV3(nodes)
	}
	e.store(ref, j, res)
	return nil
}

// lookup reports whether the resource a quoted name names is wanted: in
// want (j is then -1), or in jobs (j is then its index).
func (e *listEntry) lookup(quoted []byte, esc bool) (ref Ref, j int, ok bool, err error) {
	if e.jobs == nil {
		ref, ok, err = e.wanted(quoted, esc)
		return ref, -1, ok, err
	}
	j, ok, err = e.wantedJob(quoted, esc)
	return Ref{}, j, ok, err
}

// store records what an entry says of a wanted resource, found by lookup.
func (e *listEntry) store(ref Ref, j int, res health.Result) {
	if j >= 0 {
		e.found[j].res = res
		e.found[j].listed++
		return
	}
	l := e.out[ref]
	l.res = res
	l.entries++
	e.out[ref] = l
}

// wanted reads a quoted name and reports whether want holds its resource.
// The lookup allocates nothing, as most entries of a long list are not
// wanted, and a wanted one takes its Ref from want: the name need only be
// checked as ParseRef would, which FuzzDecodeListWanted holds it to.
func (e *listEntry) wanted(quoted []byte, esc bool) (Ref, bool, error) {
	name, err := nameOf(quoted, esc)
	if err != nil {
		return Ref{}, false, err
	}
	if e.want == nil {
		ref, err := ParseRef(string(name))
		if err != nil {
			return Ref{}, false, nil // a resource no key can name
		}
		return ref, true, nil
	}
	j, _, ok := splitName(name)
	if !ok {
		return Ref{}, false, nil
	}
	ref, ok := e.want[string(name[j+1:])]
	return ref, ok, nil
}

// wantedJob is wanted for a poll: it reports which of the plan's resources
// a quoted name names, if any. The lookup allocates nothing;
// FuzzDecodeListJobs holds it to wanted.
func (e *listEntry) wantedJob(quoted []byte, esc bool) (int, bool, error) {
	name, err := nameOf(quoted, esc)
	if err != nil {
		return 0, false, err
	}
	j, _, ok := splitName(name)
	if !ok {
		return 0, false, nil
	}
	k, ok := e.jobs.Lookup(name[j+1:])
	return k, ok, nil
}

// nameOf returns the text of a quoted name.
func nameOf(quoted []byte, esc bool) ([]byte, error) {
	if !esc {
		return quoted[1 : len(quoted)-1], nil
	}
	s, err := unquote(quoted, esc)
	return []byte(s), err
}

// splitName finds the last two segments of a list entry's name, the
// resource "<type>/<id>" at name[j+1:i] and name[i+1:], and reports
// whether name has them and a prefix ParseRef accepts: a leading
// "/" and no empty segment. (Whether the resource is valid is left to the
// lookup: every resource asked for is.)
func splitName(name []byte) (j, i int, ok bool) {
	i = bytes.LastIndexByte(name, '/')
	if i < 0 {
		return 0, 0, false
	}
	j = bytes.LastIndexByte(name[:i], '/')
	if j < 0 {
		return 0, 0, false // "<type>/<id>": no leading "/"
	}
	if name[0] != '/' || bytes.Contains(name[:j+1], []byte("//")) {
		return 0, 0, false
	}
	return j, i, true
}

// meter bounds what the list's decoder reads: the whole body, and how far
// it reads past mark, the start of the entry it decodes, which bounds the
// decoder's buffer.
type meter struct {
	r                 io.Reader
	n, mark           int64
	limit, entryLimit int64
}

func (m *meter) Read(p []byte) (int, error) {
	switch {
	case m.n > m.limit:
		return 0, fmt.Errorf("%w: body exceeds the %d-byte limit", errListTooLarge, m.limit)
	case m.n-m.mark > m.entryLimit:
		return 0, fmt.Errorf("%w: an entry exceeds %d bytes", errListTooLarge, m.entryLimit)
	}
	if rest := m.limit + 1 - m.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	k, err := m.r.Read(p)
	m.n += int64(k)
	return k, err
}
