package apisix_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/health"
)

// hugeList is a list of n tiny entries, {"name":"/a/upstreams/uN","nodes":{}},
// about 42 bytes each: 1.5 M of them make a 60 MiB list,
// under the 64 MiB limit.
func hugeList(n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 44)
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":"/a/upstreams/u`)
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`","nodes":{}}`)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// madeList is hugeList(n) made as it is read, with its whole length
// declared: a client that gives a list up at its entry cap reads only the
// start of it, and the test need not build 60 MiB it never reads.
type madeList int

func (n madeList) Read() (io.Reader, int64) {
	size := int64(2) // the brackets
	for i := range int(n) {
		size += int64(len(`{"name":"/a/upstreams/u","nodes":{}}`) + len(strconv.Itoa(i)))
		if i > 0 {
			size++ // the comma
		}
	}
	return &listMaker{n: int(n)}, size
}

// listMaker writes hugeList's entries one at a time as they are read.
type listMaker struct {
	n, i int
	buf  []byte
	done bool
}

func (m *listMaker) Read(p []byte) (int, error) {
	for len(m.buf) < len(p) && !m.done {
		switch {
		case m.i == 0 && m.n > 0:
			m.buf = append(m.buf, '[')
		case m.i == 0:
			m.buf = append(m.buf, "[]"...)
			m.done = true
			continue
		}
		if m.i == m.n {
			m.buf = append(m.buf, ']')
			m.done = true
			continue
		}
		if m.i > 0 {
			m.buf = append(m.buf, ',')
		}
		m.buf = append(m.buf, `{"name":"/a/upstreams/u`...)
		m.buf = strconv.AppendInt(m.buf, int64(m.i), 10)
		m.buf = append(m.buf, `","nodes":{}}`...)
		m.i++
	}
	if len(m.buf) == 0 {
		return 0, io.EOF
	}
	k := copy(p, m.buf)
	m.buf = m.buf[:copy(m.buf, m.buf[k:])]
	return k, nil
}

// listBytes is a list already made.
type listBytes []byte

func (b listBytes) Read() (io.Reader, int64) { return bytes.NewReader(b), int64(len(b)) }

// memAPI answers from memory, without sockets: the list for /v1/healthcheck
// and one healthy node for every resource, which it counts.
type memAPI struct {
	list    interface{ Read() (io.Reader, int64) }
	fetched *atomic.Int64
}

func (m memAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	one := []byte(`{"name":"/a` + r.URL.Path[len("/v1/healthcheck"):] + `","nodes":[{"ip":"10.0.0.1","port":80,"status":"healthy"}],"type":"http"}`)
	body, size := io.Reader(bytes.NewReader(one)), int64(len(one))
	if r.URL.Path == "/v1/healthcheck" {
		body, size = m.list.Read()
	} else if m.fetched != nil {
		m.fetched.Add(1)
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(body),
		ContentLength: size,
		Request:       r,
	}, nil
}

// hugeKeys are 10 keys spread over hugeList(1.5 M).
func hugeKeys() []string {
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = fmt.Sprintf("/a/upstreams/u%d", i*150_000)
	}
	return keys
}

// A list over the entry cap is given up and the keys are fetched one by
// one, in the same poll; at the cap it answers them.
func TestListOverEntryCapFallsBack(t *testing.T) {
	tests := []struct {
		name    string
		entries int // in the list
		cap     int // MaxListEntries; 0: the default
		want    health.Verdict
	}{
		{"at a cap", 1000, 1000, health.NoChecker},
		{"over a cap", 1001, 1000, health.Up},
		{"over the default cap", apisix.DefaultMaxListEntries + 1, 0, health.Up},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fetched atomic.Int64
			c, err := apisix.NewClient("http://127.0.0.1:9090", apisix.Options{
				Mode: apisix.ModeList, MaxListEntries: tt.cap,
				HTTPClient: &http.Client{Transport: memAPI{madeList(tt.entries), &fetched}},
			})
			if err != nil {
				t.Fatal(err)
			}
			keys := []string{"/a/upstreams/u0", "/a/upstreams/u999"}
			snap := c.Poll(context.Background(), ups(keys...))
			for _, k := range keys {
				if r := snap[k]; r.Verdict != tt.want {
					t.Errorf("%s: %v (%v), want %v", k, r.Verdict, r.Err, tt.want)
				}
			}
			if n, want := fetched.Load(), map[bool]int64{true: 2, false: 0}[tt.want == health.Up]; n != want {
				t.Errorf("%d fetched one by one, want %d", n, want)
			}
		})
	}
}

// A hostile list: 60 MiB of 1.5 M tiny entries
// with a 2 s timeout. It took seconds to decode, so every poll's keys came
// out Failed and every VIP was withdrawn; now the list is given up (at its
// entry cap, or at half the deadline, whichever comes first) and the keys
// are read one by one in time.
func TestListHugeWithinTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 60 MiB list")
	}
	var fetched atomic.Int64
	c, err := apisix.NewClient("http://127.0.0.1:9090", apisix.Options{
		Mode: apisix.ModeList, Timeout: 2 * time.Second,
		HTTPClient: &http.Client{Transport: memAPI{madeList(1_500_000), &fetched}},
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := hugeKeys()
	snap := c.Poll(context.Background(), ups(keys...))
	for _, k := range keys {
		if r := snap[k]; r.Verdict != health.Up {
			t.Errorf("%s: %v (%v), want up from its own request", k, r.Verdict, r.Err)
		}
	}
	if n := fetched.Load(); n != int64(len(keys)) {
		t.Errorf("%d keys fetched one by one, want %d", n, len(keys))
	}
}

// BenchmarkListHuge is a list poll for 10 keys against a
// 60 MiB list of 1.5 M tiny entries, with a deadline long enough that the
// poll never runs out of time. With the default entry cap the list is
// given up after 200,000 entries and the keys fetched one by one; without
// a cap every entry is decoded. Run with -benchtime=3x; peak memory is
// best read as the test binary's maximum RSS (/usr/bin/time -v), minus the
// ~130 MB the test's own list costs.
func BenchmarkListHuge(b *testing.B) {
	list := hugeList(1_500_000)
	keys := hugeKeys()
	for _, bc := range []struct {
		name string
		cap  int
		want health.Verdict
	}{{"default-cap", 0, health.Up}, {"no-cap", 2_000_000, health.NoChecker}} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := apisix.NewClient("http://127.0.0.1:9090", apisix.Options{
				Mode: apisix.ModeList, Timeout: time.Minute, MaxListEntries: bc.cap,
				HTTPClient: &http.Client{Transport: memAPI{list: listBytes(list)}},
			})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(list)))
			b.ReportAllocs()
			us := ups(keys...)
			cpu := cpuTime(b)
			for b.Loop() {
				snap := c.Poll(context.Background(), us)
				for _, k := range keys {
					if r := snap[k]; r.Verdict != bc.want {
						b.Fatalf("%s: %v %v", k, r.Verdict, r.Err)
					}
				}
			}
			// CPU rather than wall time alone: on a shared machine the
			// second depends on the neighbours.
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// madeList reads as hugeList is written, and declares its length.
func TestMadeListIsHugeList(t *testing.T) {
	for _, n := range []int{0, 1, 2, 1000} {
		r, size := madeList(n).Read()
		got, err := io.ReadAll(io.LimitReader(r, 1<<20))
		if want := hugeList(n); err != nil || !bytes.Equal(got, want) || size != int64(len(want)) {
			t.Errorf("madeList(%d): %d bytes, %v, declared %d; want %d bytes", n, len(got), err, size, len(want))
		}
	}
}
