package statushttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/status"
)

// versioned is a Versioned Source that counts its renders and whose
// Status may be held up by block.
type versioned struct {
	s       status.Status
	version atomic.Uint64
	renders atomic.Int64
	running atomic.Int64 // Status calls in progress
	most    atomic.Int64 // the most in progress at once
	block   chan struct{}
}

func (v *versioned) StatusVersion() (uint64, bool) { return v.version.Load(), true }

// Summary is what rhi_ready is judged on; it is no render.
func (v *versioned) Summary() status.Status {
	s := v.s
	s.VIPs = nil
	return s
}

func (v *versioned) Status() status.Status {
	n := v.running.Add(1)
	defer v.running.Add(-1)
	for {
		m := v.most.Load()
		if n <= m || v.most.CompareAndSwap(m, n) {
			break
		}
	}
	v.renders.Add(1)
	if v.block != nil {
		<-v.block
	}
	return v.s
}

// noGC turns the collector off for the rest of the test: a document no
// reader holds is kept by a weak pointer until the collector takes it, so
// the tests that count renders across readers that do not overlap must not
// let it run.
func noGC(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// TestReadersShareOneRender: any number of readers of one version of the
// Source, on /status and /metrics, cost one render of each; a new version
// costs one more.
func TestReadersShareOneRender(t *testing.T) {
	noGC(t)
	src := &versioned{s: statusN(50)}
	h := Handler(src, NewMetrics(src, "dev"), func() time.Time { return t0.Add(time.Second) })
	_, first := get(t, h, "/status")
	_, firstMetrics := get(t, h, "/metrics?name[]=rhi_vip_desired")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/status"
			if i%2 == 1 {
				path = "/metrics?name[]=rhi_vip_desired"
			}
			if _, body := get(t, h, path); body != first && body != firstMetrics {
				t.Errorf("%s: a reader got another document:\n%.200s", path, body)
			}
		}()
	}
	wg.Wait()
	if n := src.renders.Load(); n != 2 {
		t.Errorf("22 readers of one version made %d renders, want 2 (one /status, one /metrics)", n)
	}
	src.s.VIPs = src.s.VIPs[:10]
	src.version.Add(1)
	if _, body := get(t, h, "/status"); body == first {
		t.Errorf("/status after a new version is the old document")
	}
	get(t, h, "/status")
	if n := src.renders.Load(); n != 3 {
		t.Errorf("two readers of a new version made %d renders in all, want 3", n)
	}
}

// TestReadersDoNotAllocatePerRequest: at 5,000 VIPs a read of /status
// or /metrics allocates a small fraction of its document: the document is
// not rendered nor copied for each reader. What /metrics allocates is the
// registry's gather (the Go runtime's and the process's families, ~150
// KB), whatever the number of VIPs.
func TestReadersDoNotAllocatePerRequest(t *testing.T) {
	noGC(t)
	src := &versioned{s: statusN(5000)}
	h := Handler(src, NewMetrics(src, "dev"), time.Now)
	for _, tc := range []struct {
		path     string
		fraction int
	}{{"/status", 20}, {"/metrics", 10}} {
		var doc countingWriter // counts the document without a copy of it
		h.ServeHTTP(&doc, httptest.NewRequest("GET", tc.path, nil))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 20 {
			h.ServeHTTP(discardWriter{}, httptest.NewRequest("GET", tc.path, nil))
		}
		runtime.ReadMemStats(&after)
		perRead := (after.TotalAlloc - before.TotalAlloc) / 20
		if limit := uint64(doc.n / tc.fraction); perRead > limit {
			t.Errorf("%s: a read allocates %d bytes; want under %d (1/%d of its document of %d bytes)", tc.path, perRead, limit, tc.fraction, doc.n)
		}
	}
	if n := src.renders.Load(); n != 2 {
		t.Errorf("%d renders, want 2", n)
	}
}

// TestOneRenderAtATime: readers of new versions on two handlers (the two
// listeners) over the same Metrics wait for one another's render instead
// of rendering at once. The first render is held until every reader has
// asked; without the one render slot the others would render meanwhile.
func TestOneRenderAtATime(t *testing.T) {
	src := &versioned{s: statusN(10), block: make(chan struct{})}
	m := NewMetrics(src, "dev")
	hs := []http.Handler{Handler(src, m, time.Now), Handler(src, m, time.Now)}
	var wg sync.WaitGroup
	var asked atomic.Int64
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src.version.Add(1)
			asked.Add(1)
			get(t, hs[i%2], []string{"/status", "/metrics"}[i/2%2])
		}()
	}
	for asked.Load() < 8 || src.running.Load() == 0 {
		runtime.Gosched()
	}
	for range 1000 { // let the others reach their render, were they allowed to
		runtime.Gosched()
	}
	close(src.block)
	wg.Wait()
	if most := src.most.Load(); most != 1 {
		t.Errorf("%d renders at once, want 1", most)
	}
}

// TestLiveDocumentsBounded: however many readers hold documents and
// however often the Source changes, at most maxLiveDocs are alive; beyond,
// a reader gets the newest one without a render, and the documents go as
// their readers finish.
func TestLiveDocumentsBounded(t *testing.T) {
	renders := 0
	var version uint64
	c := &shared{
		version: func() (uint64, bool) { return version, true },
		render:  func(int) *doc { renders++; return &doc{body: []byte(fmt.Sprint(renders))} },
		renders: make(chan struct{}, 1),
	}
	var releases []func()
	var last *doc
	for i := range 10 {
		version = uint64(i)
		d, release, err := c.get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
		last = d
		if n := c.held(); n > maxLiveDocs {
			t.Fatalf("after %d readers of new versions, %d documents alive, want at most %d", i+1, n, maxLiveDocs)
		}
	}
	if renders != maxLiveDocs {
		t.Errorf("%d renders for 10 held readers, want %d (the rest given the newest)", renders, maxLiveDocs)
	}
	if string(last.body) != fmt.Sprint(maxLiveDocs) {
		t.Errorf("the last reader got document %q, want the newest, %d", last.body, maxLiveDocs)
	}
	for _, r := range releases {
		r()
		r() // twice is once
	}
	if n := c.held(); n != 0 {
		t.Errorf("%d documents held after every reader left, want 0 (the newest is kept weakly)", n)
	}
	d, release, _ := c.get(context.Background())
	release()
	if renders != maxLiveDocs+1 || string(d.body) != fmt.Sprint(maxLiveDocs+1) {
		t.Errorf("a reader after the others left got %q after %d renders, want a render of the newest version", d.body, renders)
	}
}

// TestStalledReaderCutOff: a client that asks for /status and reads
// nothing is cut off once a write has waited for the stall, and the
// document it held is let go.
func TestStalledReaderCutOff(t *testing.T) {
	t.Parallel() // waits for the stall; its own server and Source

	// ~2.4 MB: more than the sockets buffers and the 1 MiB bound below.
	src := &versioned{s: statusN(4000)}
	// The stall is short: a write waits for it only once the sockets'
	// buffers are full, and a cut that came sooner would still leave the
	// client short of the document.
	h := newHandler(src, NewMetrics(src, "dev"), time.Now, 10*time.Millisecond)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rel := newReleases()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log, _ := test.NewNullLogger()
	log.SetLevel(logrus.PanicLevel)
	go serveOn(ctx, ln, h, Options{released: rel.hook}.withDefaults(), log)

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(64 << 10) // the kernel doubles it
	}
	fmt.Fprintf(c, "GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
	// A bound for the test only: the cut comes after the stall.
	rel.wait(t, "stalled client", c, 20*time.Second)
	got, _ := io.Copy(io.Discard, bufio.NewReader(c))
	// The same version's document, as a reader after the cut gets it:
	// the one the client was sent while it is still kept, else the same
	// rendered again.
	var doc countingWriter
	h.ServeHTTP(&doc, httptest.NewRequest("GET", "/status", nil))
	if doc.n <= 1<<20 {
		t.Fatalf("/status is %d bytes, want over 1 MiB for the bound below to mean anything", doc.n)
	}
	if got >= int64(doc.n) {
		t.Errorf("the stalled client got the whole document (%d bytes)", got)
	}
	if got > 1<<20 {
		t.Errorf("%d bytes were in the sockets' buffers when the client was cut off; want under 1 MiB (twice sendBuffer and the client's 128 KiB)", got)
	}
}

// TestNothingHeldBetweenReaders: once its last reader is done, a document
// is left to the collector: a reader after a collection renders anew, and
// the document before it is gone.
func TestNothingHeldBetweenReaders(t *testing.T) {
	renders := 0
	c := &shared{
		version: func() (uint64, bool) { return 1, true },
		render:  func(int) *doc { renders++; return &doc{body: make([]byte, 1<<20)} },
		renders: make(chan struct{}, 1),
	}
	d, release, err := c.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gone := make(chan struct{})
	runtime.AddCleanup(d, func(ch chan struct{}) { close(ch) }, gone)
	release()
	d = nil
	runtime.GC()
	select {
	case <-gone:
	case <-time.After(10 * time.Second): // a bound for the test only: cleanups run right after the collection
		t.Fatal("the document outlived its readers: something still holds it")
	}
	if _, release, _ := c.get(context.Background()); release != nil {
		release()
	}
	if renders != 2 {
		t.Errorf("%d renders, want 2: the document was collected, the second reader must render anew", renders)
	}
}
