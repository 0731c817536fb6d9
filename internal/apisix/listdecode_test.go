package apisix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/rhi-daemon/rhi/internal/health"

	"github.com/google/go-cmp/cmp"
)

// listSummary is what the list decoder's tests compare: each resource's
// verdict as a key would get it, and how many entries named it.
type listSummary struct {
	Got     got
	Entries int
}

// noLimits lets a test's list through whatever its size.
var noLimits = listLimits{bytes: 1 << 40, entries: 1 << 30, entryBytes: 1 << 40}

// decodeBytes decodes a whole list held in memory, keeping every resource.
func decodeBytes(body []byte) (map[Ref]listed, error) {
	return decodeHealthList(context.Background(), bytes.NewReader(body), nil, noLimits)
}

func summarize(m map[Ref]listed) map[Ref]listSummary {
	if m == nil {
		return nil
	}
	out := make(map[Ref]listSummary, len(m))
	for ref, l := range m {
		out[ref] = listSummary{summary(l.res), l.entries}
	}
	return out
}

func TestDecodeHealthList(t *testing.T) {
	up := func(h, n int) listSummary { return listSummary{got{Verdict: health.Up, Healthy: h, Total: n}, 1} }
	down := func(n int) listSummary { return listSummary{got{Verdict: health.Down, Total: n}, 1} }
	noChecker := listSummary{got{Verdict: health.NoChecker, Err: true}, 1}
	const (
		ok = iota
		v2
		bad
	)
	tests := []struct {
		name string
		body string // "@file" reads testdata/file
		kind int
		want map[Ref]listSummary
	}{
		{"v3 list, every type", "@v3-list-all.json", ok, map[Ref]listSummary{
			{Type: "routes", ID: "1"}: noChecker, {Type: "services", ID: "web"}: down(1),
			{Type: "upstreams", ID: "api"}: up(1, 2), {Type: "upstreams", ID: "tcp-db"}: up(1, 1),
		}},
		{"standalone names", "@t-3.18.0-control-healthcheck-TEST2-list.json", ok, map[Ref]listSummary{{Type: "routes", ID: "1"}: up(1, 2)}},
		{"standalone service", "@t-3.18.0-control-healthcheck-TEST3-list.json", ok, map[Ref]listSummary{{Type: "services", ID: "1"}: down(1)}},
		{"stream route", "@t-3.18.0-stream-node-control-api-healthcheck-list.json", ok, map[Ref]listSummary{{Type: "stream_routes", ID: "1"}: up(1, 1)}},
		{"empty {} (3.18.0 test)", "@t-3.18.0-control-healthcheck-TEST4-list-no-checkers.json", ok, nil},
		{"empty {}", "@v3-list-empty.json", ok, nil},
		{"empty {} of 2.x", "@v2-list-empty.json", ok, nil},
		{"empty { } with spaces", " { \n } ", ok, nil},
		{"empty []", "[]", ok, map[Ref]listSummary{}},
		{"empty [ ]", " [ ]\n", ok, map[Ref]listSummary{}},
		{"null", "null", ok, nil},
		{"2.x list", "@v2-list-all.json", v2, nil},
		{"2.x list (2.15.3 test)", "@t-2.15.3-control-healthcheck-TEST2-list.json", v2, nil},
		{"2.x entry among 3.3+ ones", `[{"name":"/upstreams/a","nodes":[]},{"name":"upstream#/upstreams/b","src_type":"upstreams","nodes":{}}]`, v2, nil},
		{"healthy_nodes alone marks 2.x", `[{"name":"/upstreams/a","nodes":[],"healthy_nodes":{}}]`, v2, nil},
		{"purging nodes ignored", `[{"name":"/upstreams/a","nodes":[{"status":"healthy","purge_time":1.5},{"status":"unhealthy"}]},` +
			`{"name":"/upstreams/b","nodes":[{"status":"healthy","purge_time":1}]}]`, ok, map[Ref]listSummary{
			{Type: "upstreams", ID: "a"}: down(1), {Type: "upstreams", ID: "b"}: noChecker,
		}},
		{"empty node lists in every spelling", `[{"name":"/upstreams/a","nodes":{}},{"name":"/upstreams/b","nodes":[]},{"name":"/upstreams/c","nodes":null},{"name":"/upstreams/d"}]`, ok, map[Ref]listSummary{
			{Type: "upstreams", ID: "a"}: noChecker, {Type: "upstreams", ID: "b"}: noChecker, {Type: "upstreams", ID: "c"}: noChecker, {Type: "upstreams", ID: "d"}: noChecker,
		}},
		{"mostly and unknown statuses", `[{"name":"/upstreams/a","nodes":[{"status":"mostly_healthy"},{"status":"mostly_unhealthy"},{"status":"checking"},{}]}]`, ok, map[Ref]listSummary{
			{Type: "upstreams", ID: "a"}: up(1, 4),
		}},
		{"same resource under two prefixes", `[{"name":"/apisix/upstreams/a","nodes":[{"status":"healthy"}]},{"name":"/other/upstreams/a","nodes":[{"status":"unhealthy"}]}]`, ok, map[Ref]listSummary{
			{Type: "upstreams", ID: "a"}: {down(1).Got, 2},
		}},
		{"names no key can hold are skipped", `[{"name":"/apisix/plugin_configs/1","nodes":[]},{"name":"","nodes":[]},{"name":"upstreams/a","nodes":[]},{"name":"/upstreams/` + strings.Repeat("x", 65) + `"},{"name":"/upstreams/b","nodes":[{"status":"healthy"}]}]`, ok, map[Ref]listSummary{
			{Type: "upstreams", ID: "b"}: up(1, 1),
		}},
		{"bad node list fails its key only", `[{"name":"/upstreams/a","nodes":"x"},{"name":"/upstreams/b","nodes":{"a":1}},{"name":"/upstreams/c","nodes":[{"status":"healthy"}]}]`, ok, map[Ref]listSummary{
			{Type: "upstreams", ID: "a"}: {got{Verdict: health.Failed, Err: true}, 1}, {Type: "upstreams", ID: "b"}: {got{Verdict: health.Failed, Err: true}, 1}, {Type: "upstreams", ID: "c"}: up(1, 1),
		}},
		{"one resource's body", "@v3-upstream-mixed.json", bad, nil},
		{"empty body", "", bad, nil},
		{"string", `"[]"`, bad, nil},
		{"number", `42`, bad, nil},
		{"garbage", "\x00\xff<<not json>>", bad, nil},
		{"truncated", `[{"name":"/upstreams/a","nodes":[`, bad, nil},
		{"a lone brace", "{", bad, nil},
		{"non-object entry", `[1]`, bad, nil},
		{"null entry", `[null]`, bad, nil},
		{"nameless entry", `[{"nodes":[]}]`, bad, nil},
		{"name not a string", `[{"name":7,"nodes":[]}]`, bad, nil},
		{"HTML", "<html><body>upstream check list</body></html>", bad, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			if file, ok := strings.CutPrefix(tt.body, "@"); ok {
				var err error
				if body, err = os.ReadFile("testdata/" + file); err != nil {
					t.Fatal(err)
				}
			}
			m, err := decodeBytes(body)
			switch tt.kind {
			case ok:
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if diff := cmp.Diff(tt.want, summarize(m)); diff != "" {
					t.Errorf("mismatch (-want +got):\n%s", diff)
				}
			case v2:
				if !errors.Is(err, errV2List) {
					t.Errorf("got %v, %v; want the 2.x error", summarize(m), err)
				}
			case bad:
				if err == nil || errors.Is(err, errV2List) || m != nil {
					t.Errorf("got %v, %v; want a decode error", summarize(m), err)
				}
			}
		})
	}
}

// FuzzDecodeList feeds arbitrary bodies to the list decoder: it must not
// panic, must reject what is not JSON, may only hold resources a key can
// name, and every entry must give a self-consistent Result.
func FuzzDecodeList(f *testing.F) {
	for name, b := range fixtures(f) {
		if strings.Contains(name, "list") {
			f.Add(b)
		}
	}
	f.Add([]byte(`[{"name":"/upstreams/a","nodes":[{"status":"healthy","purge_time":null}]},{"name":"/b/upstreams/a"}]`))
	f.Add([]byte(` { } `))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := decodeBytes(body)
		if err != nil {
			if m != nil {
				t.Errorf("%q: entries %v with error %v", body, m, err)
			}
			return
		}
		if !json.Valid(body) {
			t.Errorf("%q: accepted invalid JSON", body)
		}
		for ref, l := range m {
			if back, err := ParseRef("/" + ref.Type + "/" + ref.ID); err != nil || back != ref {
				t.Errorf("%q: resource %v that no key names (%v)", body, ref, err)
			}
			if l.entries < 1 {
				t.Errorf("%q: %v from %d entries", body, ref, l.entries)
			}
			checkResult(t, l.res)
		}
	})
}

// BenchmarkDecodeList10000 is the client's share of a list poll at 10,000
// upstreams: decoding the list and every requested entry's nodes.
func BenchmarkDecodeList10000(b *testing.B) {
	var sb strings.Builder
	refs := make([]Ref, 10000)
	sb.WriteByte('[')
	for i := range refs {
		refs[i] = Ref{Type: "upstreams", ID: fmt.Sprint("u", i)}
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"name":"/apisix/upstreams/u%d","nodes":[`+
			`{"counter":{"http_failure":0,"success":0,"tcp_failure":0,"timeout_failure":0},"hostname":"10.0.0.1","ip":"10.0.0.1","port":80,"status":"healthy"},`+
			`{"counter":{"http_failure":0,"success":0,"tcp_failure":2,"timeout_failure":0},"hostname":"10.0.0.2","ip":"10.0.0.2","port":80,"status":"unhealthy"}],"type":"http"}`, i)
	}
	sb.WriteByte(']')
	body := []byte(sb.String())
	want := make(map[string]Ref, len(refs))
	for _, ref := range refs {
		want[ref.String()] = ref
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		m, err := decodeHealthList(context.Background(), bytes.NewReader(body), want, noLimits)
		if err != nil {
			b.Fatal(err)
		}
		for _, ref := range refs {
			if r := m[ref].res; r.Verdict != health.Up {
				b.Fatalf("%v: %v %v", ref, r.Verdict, r.Err)
			}
		}
	}
}

// Only the resources asked for are kept, matched by the last two segments
// of the name; a name with a bad prefix is still skipped.
func TestDecodeListKeepsWanted(t *testing.T) {
	body := `[{"name":"/apisix/upstreams/api","nodes":[{"status":"healthy"}]},` +
		`{"name":"/apisix/upstreams/other","nodes":[{"status":"healthy"}]},` +
		`{"nodes":[{"status":"unhealthy"}],"name":"\/x\/services\/web"},` +
		`{"name":"//routes/1","nodes":[]},{"name":"routes/1","nodes":[]}]`
	want := map[string]Ref{}
	for _, ref := range []Ref{{Type: "upstreams", ID: "api"}, {Type: "services", ID: "web"}, {Type: "routes", ID: "1"}, {Type: "upstreams", ID: "gone"}} {
		want[ref.String()] = ref
	}
	m, err := decodeHealthList(context.Background(), strings.NewReader(body), want, noLimits)
	if err != nil {
		t.Fatal(err)
	}
	wantSummary := map[Ref]listSummary{
		{Type: "upstreams", ID: "api"}: {got{Verdict: health.Up, Healthy: 1, Total: 1}, 1},
		{Type: "services", ID: "web"}:  {got{Verdict: health.Down, Total: 1}, 1},
	}
	if diff := cmp.Diff(wantSummary, summarize(m)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// tinyList is a list of n entries of about 42 bytes, none with nodes.
func tinyList(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"/a/upstreams/u%d","nodes":{}}`, i)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// countingReader counts what was read from it and calls at once its count
// passes after.
type countingReader struct {
	r     io.Reader
	n     int
	after int
	at    func()
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += k
	if c.at != nil && c.n > c.after {
		c.at()
		c.at = nil
	}
	return k, err
}

// repeatReader reads as n copies of s, made as they are read.
type repeatReader struct {
	chunk []byte // copies of s
	left  int64  // bytes still to read
	off   int    // where the next read starts in chunk
}

func newRepeatReader(s string, n int) *repeatReader {
	return &repeatReader{chunk: bytes.Repeat([]byte(s), max(1, 4096/len(s))), left: int64(n) * int64(len(s))}
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	k := 0
	for k < len(p) {
		c := copy(p[k:], r.chunk[r.off:])
		k += c
		r.off = (r.off + c) % len(r.chunk)
	}
	r.left -= int64(k)
	return k, nil
}

// The list stops at its bounds: entries (exact at the boundary), bytes
// (exact, without a declared length), and the bytes of one entry, without
// reading much past the entry that breaks them.
func TestDecodeListBounds(t *testing.T) {
	list := tinyList(1000)
	listBody := func() io.Reader { return bytes.NewReader(list) }
	// An entry of 9 MiB, made as it is read: the decoder reads at most a
	// third of it.
	huge := func() io.Reader {
		return io.MultiReader(strings.NewReader(`[{"name":"/a/upstreams/u1","nodes":[`),
			newRepeatReader(`{},`, 3<<20), strings.NewReader(`{}]}]`))
	}
	tests := []struct {
		name     string
		body     func() io.Reader
		lim      listLimits
		ok       bool
		readMost int // bytes the decoder may read; 0: any
	}{
		{"entries at the cap", listBody, listLimits{bytes: 1 << 30, entries: 1000, entryBytes: 1 << 20}, true, 0},
		{"entries over the cap", listBody, listLimits{bytes: 1 << 30, entries: 999, entryBytes: 1 << 20}, false, 0},
		{"bytes at the limit", listBody, listLimits{bytes: int64(len(list)), entries: 1 << 20, entryBytes: 1 << 20}, true, 0},
		{"bytes over the limit", listBody, listLimits{bytes: int64(len(list)) - 1, entries: 1 << 20, entryBytes: 1 << 20}, false, len(list)},
		{"one entry of 9 MiB", huge, listLimits{bytes: 1 << 30, entries: 1 << 20, entryBytes: 1 << 20}, false, 3 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &countingReader{r: tt.body()}
			m, err := decodeHealthList(context.Background(), r, nil, tt.lim)
			switch {
			case tt.ok && (err != nil || len(m) != 1000):
				t.Fatalf("%d entries, error %v; want 1000", len(m), err)
			case !tt.ok && (!errors.Is(err, errListTooLarge) || m != nil):
				t.Fatalf("%d entries, error %v; want too large", len(m), err)
			}
			if tt.readMost > 0 && r.n > tt.readMost {
				t.Errorf("read %d bytes, want at most %d", r.n, tt.readMost)
			}
		})
	}
}

// The huge entry's reader reads as the body it stands for.
func TestRepeatReader(t *testing.T) {
	for _, n := range []int{0, 1, 1365, 1366, 5000} {
		got, err := io.ReadAll(&chunkReader{newRepeatReader(`{},`, n), 1000})
		if want := strings.Repeat(`{},`, n); err != nil || string(got) != want {
			t.Errorf("%d copies: %d bytes, %v; want %d bytes", n, len(got), err, len(want))
		}
	}
}

// The decoder watches the poll's deadline as it goes: a deadline that
// passes while the list is read stops it there, not at the end.
func TestDecodeListDeadline(t *testing.T) {
	list := tinyList(100_000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &countingReader{r: bytes.NewReader(list), after: 64 << 10, at: cancel}
	m, err := decodeHealthList(ctx, r, nil, noLimits)
	if !errors.Is(err, context.Canceled) || m != nil {
		t.Fatalf("%d entries, error %v; want canceled", len(m), err)
	}
	if r.n > 128<<10 {
		t.Errorf("read %d of %d bytes after the deadline passed at 64 KiB", r.n, len(list))
	}
}
