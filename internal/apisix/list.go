package apisix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// Mode is how a poll reads the control API (apisix_poll_mode).
//
// Per-upstream requests cost the client ~40 µs of CPU and the control API
// about as much per distinct resource and poll (BENCHMARKS.md): at 10,000
// upstreams ~500 ms of CPU and ~100 MB allocated per poll, all of it work for
// the nginx workers that carry APISIX's traffic. One GET /v1/healthcheck
// answers the same for ~90 ms. The list cannot tell "no checker" from "not
// found" (both are simply absent), so every key it lacks is still fetched
// one by one, in the same poll: the two 404s of SPEC §3 keep their meaning.
type Mode string

const (
	// ModePerUpstream sends one request per distinct resource, every poll.
	ModePerUpstream Mode = "per_upstream"

	// ModeList starts every poll with one GET /v1/healthcheck and answers
	// each key whose resource the list holds from its entry, with the
	// rules of a single body (purging nodes ignored, no nodes = NoChecker).
	// Keys the list lacks are fetched one by one. An entry is matched to
	// keys by the last two segments of its name, like keys themselves, so
	// "/apisix/upstreams/api" and standalone "/upstreams/api" both answer
	// upstreams/api; a resource the list names twice is fetched on its own.
	//
	// The list is decoded as it arrives, keeping only the entries the
	// poll's keys name, so its memory is about one entry's, however long
	// it is (BENCHMARKS.md, issue 11). The list request and its decoding
	// get half of what is left of the poll's deadline, which the decoder
	// checks as it goes. If the list fails in any way (connection,
	// deadline, not 200, HTML, more than MaxListBytes or MaxListEntries,
	// one entry over MaxBodyBytes, not a list) every key is fetched one by
	// one in the rest of the deadline, as ModePerUpstream would: a broken
	// list costs time, never a verdict. Half, so that a stalled list leaves the
	// fallback as long as the list had; when the list fails because the
	// whole control API is stalled, the fallback fails too, within the
	// same apisix_timeout, and every key is Failed with its own error.
	//
	// A list in the 2.x–3.2 format (entries with src_type and
	// healthy_nodes) is not used at all and every key is fetched one by
	// one. Those versions list only the checkers of the nginx worker that
	// answered, so most keys would be missing and fetched anyway (list plus
	// almost one request per key), and which keys the list holds would
	// change from poll to poll with the worker. Use ModePerUpstream or
	// ModeAuto with them.
	ModeList Mode = "list"

	// ModeAuto uses the list as ModeList does when a poll has at least
	// AutoMinKeys distinct resources and the list's last answer was
	// usable: the 3.3+ format, and it answered at least one key. After
	// an answer that was not (2.x format, empty, none of our keys, or a
	// failure) the next AutoRetryPolls such polls are per upstream, then
	// the list is tried again (APISIX may have been upgraded, or its
	// checkers created). Below AutoMinKeys it is always per upstream.
	ModeAuto Mode = "auto"
)

const (
	// AutoMinKeys is the fewest distinct resources for which ModeAuto
	// uses the list. Below it per-upstream requests cost a few ms of CPU
	// per poll, while the list holds every checker APISIX has, which may
	// be far more than a small config asks about.
	AutoMinKeys = 100
	// AutoRetryPolls is how many polls ModeAuto stays per upstream after
	// a list answer it could not use: about half a minute at a 1 s poll.
	AutoRetryPolls = 30
)

// listPath is the control API's list of every health checker.
const listPath = "/v1/healthcheck"

func validMode(m Mode) bool {
	switch m {
	case "", ModePerUpstream, ModeList, ModeAuto:
		return true
	}
	return false
}

// autoState is ModeAuto's memory: polls that could use the list are
// counted, and the list is skipped until the count passes pausedUntil.
// Atomics keep Poll safe for concurrent use; two polls racing only shift
// the next try by a poll.
type autoState struct {
	polls       atomic.Uint64
	pausedUntil atomic.Uint64
}

// pause skips the list for the next AutoRetryPolls eligible polls.
func (a *autoState) pause() { a.pausedUntil.Store(a.polls.Load() + AutoRetryPolls) }

// listFirst reports whether a poll of n distinct resources starts with the
// list.
func (c *Client) listFirst(n int) bool {
	switch c.mode {
	case ModeList:
		return n > 0
	case ModeAuto:
		return n >= AutoMinKeys && c.auto.polls.Add(1) > c.auto.pausedUntil.Load()
	}
	return false
}

// fromList answers the jobs whose resource the list holds and reports
// whether the list was usable: the 3.3+ format, and it answered at least
// one job. Jobs it does not answer are left for fetchEach.
func (c *Client) fromList(ctx context.Context, jobs []job) bool {
	deadline, _ := ctx.Deadline() // Poll's context always has one
	lctx, cancel := context.WithTimeout(ctx, time.Until(deadline)/2)
	want := make(map[string]bool, len(jobs))
	for i := range jobs {
		want[jobs[i].ref.String()] = true
	}
	list, err := c.getList(lctx, want)
	cancel()
	if err != nil {
		// Not logged, not returned: the per-upstream requests that follow
		// decide every verdict, and their errors are what callers see.
		return false
	}
	answered := 0
	for i := range jobs {
		l, ok := list[jobs[i].ref]
		if !ok || l.entries > 1 {
			continue
		}
		r := l.res
		if r.Verdict == Failed {
			// An entry the list holds but garbled: its own endpoint may
			// still answer, so ask it (a broken list costs time, never a
			// verdict).
			continue
		}
		if r.Err != nil {
			r.Err = fmt.Errorf("GET %s: %s: %w", listPath, jobs[i].ref, r.Err)
		}
		jobs[i].res, jobs[i].done = r, true
		answered++
	}
	return answered > 0
}

// getList fetches the list and decodes it as it arrives, keeping only the
// resources in want.
func (c *Client) getList(ctx context.Context, want map[string]bool) (map[Ref]listed, error) {
	resp, err := c.send(ctx, listPath)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch ct := resp.Header.Get("Content-Type"); {
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	case isHTML(ct):
		return nil, fmt.Errorf("HTTP 200 with content type %q", ct)
	case resp.ContentLength > c.maxList:
		return nil, fmt.Errorf("body of %d bytes exceeds the %d-byte limit", resp.ContentLength, c.maxList)
	}
	return decodeHealthList(ctx, resp.Body, want, listLimits{
		bytes:      c.maxList,
		entries:    c.maxEntries,
		entryBytes: max(c.maxBody, minListEntryBytes),
	})
}

// minListEntryBytes is the least room one list entry gets, whatever
// MaxBodyBytes says: the decoder reads ahead by up to a few KiB.
const minListEntryBytes = 64 << 10

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
