package statushttp

import (
	"compress/gzip"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/status"
)

// TestStatusStreamsOddStrings: /status written one VIP at a time is the
// encoder's bytes when strings anywhere hold what the cut at "[]" or the
// escaping could get wrong: "[]" and "]}" before and inside the VIPs,
// U+2028, HTML characters, invalid UTF-8, newlines and backslashes.
func TestStatusStreamsOddStrings(t *testing.T) {
	s := sample()
	odd := "a[]b\u2028\u2029<>&\"\\\n\xff\xfe ü ]}"
	s.Reload.LastError = odd + "[]"
	s.Interface.Error = "[]"
	s.Interface.Foreign = []string{odd, "[]"}
	s.Drain.Error = odd
	for i := range s.VIPs {
		s.VIPs[i].Description = odd
		s.VIPs[i].Upstreams = append(s.VIPs[i].Upstreams, status.UpstreamStatus{Key: odd, Error: "[]"})
	}
	s.VIPs[0].Upstreams = nil
	s.VIPs[0].Probe = &status.ProbeStatus{Target: odd, Result: "up", LatencySeconds: 1e-300}
	checkStreamsAsEncoder(t, "odd strings", s)
}

// TestMetricsConcurrentScrapes: scrapes served at once, plain and
// gzipped (or plain when maxGzip are), each with its pooled writers, give
// each the same body as a scrape alone (run with -race: no writer is
// shared by two).
func TestMetricsConcurrentScrapes(t *testing.T) {
	src := &fixed{statusN(300)}
	h := Handler(src, NewMetrics(src, "dev"), func() time.Time { return t0.Add(time.Second) })
	scrape := func(gz bool) string {
		r := httptest.NewRequest("GET", "/metrics?name[]=rhi_vip_desired&name[]=rhi_upstream_nodes", nil)
		if gz {
			r.Header.Set("Accept-Encoding", "gzip")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Header().Get("Content-Encoding") != "gzip" {
			// asked for, but maxGzip responses were being gzipped
			return w.Body.String()
		}
		zr, err := gzip.NewReader(w.Body)
		if err != nil {
			return "gzip: " + err.Error()
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			return "gzip: " + err.Error()
		}
		return string(b)
	}
	want := scrape(false)
	if !strings.Contains(want, "rhi_vip_desired{") || !strings.Contains(want, "rhi_upstream_nodes{") {
		t.Fatalf("the scrape alone lacks the families asked for:\n%.300s", want)
	}
	const n = 32
	done := make(chan string, n)
	for i := range n {
		go func() { done <- scrape(i%2 == 0) }()
	}
	for i := range n {
		if got := <-done; got != want {
			t.Errorf("scrape %d of %d at once differs from a scrape alone:\n%.300s", i, n, got)
		}
	}
}
