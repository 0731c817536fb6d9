package apisix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// listed is what a list says about one resource a poll asks for: the
// Result its entry gives, and how many entries named the resource (more
// than one is ambiguous).
type listed struct {
	res     Result
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
func decodeHealthList(ctx context.Context, r io.Reader, want map[string]bool, lim listLimits) (map[Ref]listed, error) {
	m := &meter{r: r, limit: lim.bytes, entryLimit: lim.entryBytes}
	dec := json.NewDecoder(m)
	t, err := next(dec)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if t != json.Delim('[') {
		if err := emptyList(dec, t); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
		return nil, nil
	}
	e := listEntry{want: want, out: make(map[Ref]listed, len(want))}
	for n := 0; dec.More(); n++ {
		if n == lim.entries {
			return nil, fmt.Errorf("%w: more than %d entries", errListTooLarge, lim.entries)
		}
		if n%256 == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("decode: stopped after %d entries: %w", n, context.Cause(ctx))
		}
		m.mark = dec.InputOffset()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("decode: entry %d: %w", n, err)
		}
		if e.v2 {
			return nil, errV2List
		}
	}
	if _, err := next(dec); err != nil { // ']'
		return nil, fmt.Errorf("decode: %w", err)
	}
	if err := atEOF(dec); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return e.out, nil
}

// emptyList accepts the rest of a body that starts with t and is not an
// array only if it is an empty list: {} or null.
func emptyList(dec *json.Decoder, t json.Token) error {
	switch t {
	case json.Delim('{'):
		t, err := next(dec)
		if err != nil {
			return err
		}
		if t != json.Delim('}') {
			return errors.New("body is a non-empty object, not a list")
		}
	case nil:
	default:
		return fmt.Errorf("body is %s, not a list", tokenKind(t))
	}
	return atEOF(dec)
}

// listEntry decodes one entry of the list in place, in the decoder's
// buffer, and records it in out if want holds its resource.
type listEntry struct {
	want map[string]bool
	out  map[Ref]listed
	v2   bool // an entry had a key only 2.x–3.2 sends
}

func (e *listEntry) UnmarshalJSON(b []byte) error {
	w := &walker{b: b}
	if w.peek() != '{' {
		return fmt.Errorf("%s, not an object", kindOf(b))
	}
	var name []byte // quoted
	var esc bool
	var nodes []byte
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
	ref, ok, err := e.wanted(name, esc)
	if err != nil || !ok {
		return err
	}
	l := e.out[ref]
	l.res = decodeV3(nodes)
	l.entries++
	e.out[ref] = l
	return nil
}

// wanted reads a quoted name and reports whether want holds its resource.
// The lookup allocates nothing, as most entries of a long list are not
// wanted.
func (e *listEntry) wanted(quoted []byte, esc bool) (Ref, bool, error) {
	name := quoted[1 : len(quoted)-1]
	if esc {
		s, err := unquote(quoted, esc)
		if err != nil {
			return Ref{}, false, err
		}
		name = []byte(s)
	}
	if e.want != nil {
		i := bytes.LastIndexByte(name, '/')
		if i < 0 {
			return Ref{}, false, nil
		}
		j := bytes.LastIndexByte(name[:i], '/')
		if !e.want[string(name[j+1:])] {
			return Ref{}, false, nil
		}
	}
	ref, err := ParseRef(string(name))
	if err != nil {
		return Ref{}, false, nil // a resource no key can name
	}
	return ref, true, nil
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

// next reads a token inside a value, where the end of the input is an
// error: the decoder reports it as a bare io.EOF.
func next(dec *json.Decoder) (json.Token, error) {
	t, err := dec.Token()
	return t, noEOF(err)
}

// atEOF checks that nothing but JSON whitespace follows the value read.
func atEOF(dec *json.Decoder) error {
	t, err := dec.Token()
	switch {
	case err == io.EOF:
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("data after the top-level value (%v)", t)
}

// tokenKind names the JSON type of a token, for error messages.
func tokenKind(t json.Token) string {
	switch t.(type) {
	case json.Delim:
		if t == json.Delim('{') {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}
