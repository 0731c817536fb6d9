package apisix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/health"
)

// chunkReader returns at most n bytes a read, to make the list reader
// refill, compact and grow its buffer in the middle of every token.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// errClass names the kind of a list decoder's error, which callers act on.
func errClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errV2List):
		return "v2"
	case errors.Is(err, errListTooLarge):
		return "too large"
	}
	return "error"
}

// readShape is how listReader reads a body: a buffer of buf bytes, filled
// by reads of at most chunk bytes.
type readShape struct{ buf, chunk int }

// compareWithDecoder decodes body with listReader, once for each read
// shape, and with the json.Decoder it replaced, under the same limits, and
// reports any difference: the same resources and verdicts, or the same
// kind of error. The json.Decoder reads the body once: what it gives
// depends on the limits alone.
func compareWithDecoder(t *testing.T, body []byte, lim listLimits, shapes ...readShape) {
	t.Helper()
	ctx := context.Background()
	want, wantErr := decodeHealthListStd(ctx, bytes.NewReader(body), nil, lim)
	wantSum := summarize(want)
	for _, sh := range shapes {
		got, gotErr := decodeList(ctx, &chunkReader{bytes.NewReader(body), sh.chunk}, nil, lim, sh.buf)
		if errClass(gotErr) != errClass(wantErr) {
			t.Fatalf("%q (limits %+v, buffer %d, reads of %d): listReader: %v; json.Decoder: %v",
				body, lim, sh.buf, sh.chunk, gotErr, wantErr)
		}
		if gotErr != nil && got != nil {
			t.Fatalf("%q: resources %v with error %v", body, got, gotErr)
		}
		// reflect.DeepEqual first: cmp.Diff of thousands of resources
		// costs more than reading them, and is needed only to show a
		// difference.
		if gotSum := summarize(got); !reflect.DeepEqual(wantSum, gotSum) {
			t.Fatalf("%q (limits %+v, buffer %d, reads of %d): mismatch (-json.Decoder +listReader):\n%s",
				body, lim, sh.buf, sh.chunk, cmp.Diff(wantSum, gotSum))
		}
	}
}

// FuzzListReaderAgainstDecoder holds listReader to the json.Decoder it
// replaced, as an oracle, on arbitrary bodies, limits on bytes and
// entries, read sizes and buffer sizes.
func FuzzListReaderAgainstDecoder(f *testing.F) {
	for name, b := range fixtures(f) {
		if strings.Contains(name, "list") {
			f.Add(b, uint16(0), uint16(0), uint8(0))
		}
	}
	for _, s := range []string{
		`[{"name":"/a/upstreams/b","nodes":[{"status":"healthy","port":-0.5e+3,"x":[true,false,null,{}]}]}]`,
		`[{"name":"\/a\/upstreams\/\u0062","nodes":{}},{"name":"/upstreams/c","type":"http","nodes":null}] `,
		` {} `, `null`, `[]`, `[ ]`, `nul`, `{}x`, `[{}]]`, `[,{}]`, `[{},]`, `[{} {}]`, `[1]`, `[01]`,
		`[{"a":1.}]`, `[{"a":"\x"}]`, `[{"a":"\u12g4"}]`, "[{\"a\":\"\x01\"}]", `[{"a" 1}]`, `[{"a":1,}]`,
		`[{"name":"/upstreams/a","src_type":"upstream"}]`, `[{"name":"/upstreams/a"}] x`, `[{"name":"/upstreams/a"}`,
		`[{"a":tru}]`, `[{"a":truex}]`, `[{"a":[1}]`, `[{"a":{1}}]`, `[{"a":-}]`, `[{"a":1e}]`, `[{"a":1e+}]`,
		"[{\"a\":\"\xff\xfe\"},{\"name\":\"/upstreams/\xff\"}]",
	} {
		f.Add([]byte(s), uint16(0), uint16(0), uint8(0))
		f.Add([]byte(s), uint16(1), uint16(1), uint8(1))
	}
	f.Fuzz(func(t *testing.T, body []byte, entries, cut uint16, read uint8) {
		lim := noLimits
		if entries > 0 {
			lim.entries = int(entries % 64)
		}
		if cut > 0 {
			lim.bytes = max(0, int64(len(body))-int64(cut%64))
		}
		compareWithDecoder(t, body, lim, readShape{1 + int(read%32), 1 + int(read/32)}, readShape{listBufSize, len(body) + 1})
	})
}

// Bodies too large for the fuzzer to find: nesting at encoding/json's
// depth bound and one past it, an entry that outgrows the buffer many
// times, long strings and numbers split across reads, and a whole list of
// 2,000 real-shaped entries read a few bytes at a time.
func TestListReaderAgainstDecoderLarge(t *testing.T) {
	nest := func(depth int) []byte { // the entry is one of the depth levels
		return []byte(`[{"name":"/upstreams/a","x":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}]`)
	}
	var list bytes.Buffer
	list.WriteByte('[')
	for i := range 2000 {
		if i > 0 {
			list.WriteString(",\n ")
		}
		fmt.Fprintf(&list, `{"name":"/apisix/upstreams/u%d","nodes":[{"counter":{"success":%d},"ip":"10.0.0.1","port":80,"status":"healthy"},`+
			`{"ip":"10.0.0.2","port":80,"status":"unhealthy","purge_time":1.5e%d}],"type":"http"}`, i, i, i%10)
	}
	list.WriteByte(']')
	bodies := map[string][]byte{
		"depth 10000":     nest(maxNesting),
		"depth 10001":     nest(maxNesting + 1),
		"entry of 1 MiB":  []byte(`[{"name":"/upstreams/a","nodes":[` + strings.Repeat(`{"status":"healthy"},`, 50000) + `{}]}]`),
		"long string":     []byte(`[{"name":"/upstreams/a","x":"` + strings.Repeat(`ab\"\u00e9\\`, 20000) + `"}]`),
		"long number":     []byte(`[{"name":"/upstreams/a","x":-` + strings.Repeat("9", 70000) + `.5E-` + strings.Repeat("1", 300) + `}]`),
		"2,000 entries":   list.Bytes(),
		"2,000, cut":      list.Bytes()[:list.Len()-1],
		"2,000, trailing": append(bytes.Clone(list.Bytes()), " \n\t\r 0"...),
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			compareWithDecoder(t, body, noLimits, readShape{16, 7}, readShape{listBufSize, 4096})
			compareWithDecoder(t, body, listLimits{bytes: int64(len(body)) / 2, entries: 1 << 30, entryBytes: 1 << 40}, readShape{64, 1000})
			compareWithDecoder(t, body, listLimits{bytes: 1 << 40, entries: 1000, entryBytes: 1 << 40}, readShape{64, 1000})
		})
	}
	if _, err := decodeBytes(bodies["depth 10000"]); err != nil {
		t.Errorf("depth 10000: %v", err)
	}
	if _, err := decodeBytes(bodies["depth 10001"]); err == nil {
		t.Error("depth 10001: no error")
	}
	m, err := decodeList(context.Background(), &chunkReader{bytes.NewReader(list.Bytes()), 7}, nil, noLimits, 16)
	if err != nil || len(m) != 2000 {
		t.Errorf("2,000 entries: %d resources, error %v", len(m), err)
	}
}

// FuzzNodesInPlace: a list entry's node array read in place, with the rest
// of the entry after it, gives what reading it alone gave, and stops just
// past it.
func FuzzNodesInPlace(f *testing.F) {
	for _, s := range []string{
		`[{"status":"healthy","purge_time":null},null,{"status":"unhealthy","counter":{"a":[1,"]"]}}]`,
		` [ ] `, `[{"purge_time":1},{"status":"mostly_healthy"}]`, `[1]`, `[{"status":1}]`, `[{"Status":"healthy"}]`,
		`[{"status":"healthy","status":"healthy"}]`, `[{"st\u0061tus":"healthy"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = trimJSONSpace(raw)
		if !json.Valid(raw) || len(raw) == 0 || raw[0] != '[' {
			return
		}
		want := decodeV3(raw)
		rest := `,"type":"http","nodes":[{"status":"unhealthy"}]}`
		w := &walker{b: append(bytes.Clone(raw), rest...)}
		got := decodeV3At(w)
		if summary(got) != summary(want) {
			t.Fatalf("%s: in place %+v (%v), alone %+v (%v)", raw, summary(got), got.Err, summary(want), want.Err)
		}
		if got.Verdict != health.Failed && string(w.b[w.i:]) != rest {
			t.Fatalf("%s: stopped before %q, want %q", raw, w.b[w.i:], rest)
		}
	})
}

// FuzzDecodeListWanted: what a list gives for the resources asked for is
// what it gives for them when every resource is kept (names checked by
// ParseRef): the wanted path checks names on its own.
func FuzzDecodeListWanted(f *testing.F) {
	for name, b := range fixtures(f) {
		if strings.Contains(name, "list") {
			f.Add(b, uint8(0))
		}
	}
	for _, s := range []string{
		`[{"name":"/a/upstreams/x","nodes":[]},{"name":"//upstreams/x","nodes":[]},{"name":"upstreams/x","nodes":[]}]`,
		`[{"name":"/a//b/routes/1","nodes":[]},{"name":"/a/b/routes/1/","nodes":[]},{"name":"/routes/1","nodes":[{"status":"healthy"}]}]`,
		`[{"name":"\/a\/services\/w","nodes":[]},{"name":"/a/services/w\u002f","nodes":[]},{"name":"/services/w/.","nodes":[]}]`,
		`[{"name":"a/upstreams/y","nodes":[]},{"name":"/x/upstreams/..","nodes":[]},{"name":"/x/upstream/a","nodes":[]},{"name":"/stream_routes/a","nodes":[]}]`,
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, body []byte, skip uint8) {
		all, allErr := decodeBytes(body)
		// Ask for every resource the list names but every skip-th, and
		// for the resources named by every "/"-separated pair of words
		// in the body, which the list may name with a prefix ParseRef
		// rejects.
		want := map[string]Ref{}
		n := 0
		for ref := range all {
			if n++; skip == 0 || n%int(skip) != 0 {
				want[ref.String()] = ref
			}
		}
		maps.Copy(want, resourcesNamed(body))
		got, err := decodeHealthList(context.Background(), bytes.NewReader(body), want, noLimits)
		if errClass(err) != errClass(allErr) {
			t.Fatalf("%q: wanted: %v; all: %v", body, err, allErr)
		}
		var restricted map[Ref]listed
		if all != nil {
			restricted = map[Ref]listed{}
			for ref, l := range all {
				if _, ok := want[ref.String()]; ok {
					restricted[ref] = l
				}
			}
		}
		if diff := cmp.Diff(summarize(restricted), summarize(got)); diff != "" {
			t.Fatalf("%q, want %v: mismatch (-all +wanted):\n%s", body, want, diff)
		}
	})
}
