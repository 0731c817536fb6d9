package statushttp

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/rhi-daemon/rhi/internal/status"
)

// metricsContentType is what /metrics always answers: the text format
// 0.0.4, as promhttp named it for a client that asked for nothing else.
// Protobuf and OpenMetrics are not offered (promhttp offered protobuf to a
// client that asked for it; Prometheus asks for it only with native
// histograms, which rhi has none of).
const metricsContentType = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"

// gzipPool holds the gzip writers of /metrics. They compress at
// gzip.BestSpeed, where promhttp used the default level: at 10,000 VIPs
// (8.9 MB of text) 17 ms and 472 KB a scrape instead of 30 ms and 428 KB.
var (
	gzipPool = sync.Pool{New: func() any {
		z, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level: no error
		return z
	}}
	bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}
)

// serveMetrics is /metrics: the registry's families (instruments fed by
// events, build info, the Go runtime's and the process's) encoded by
// expfmt, then rhi_ready, judged now, then the shared document of the
// daemon's status families (renderMetrics), gzipped if the client asks
// and one of maxGzip compressors is free (as promhttp did, but faster: see
// gzipPool). Nothing is copied per request but the registry's few
// families. The request's name[] parameters select families, as
// promhttp's did.
func (h *handlers) serveMetrics(w http.ResponseWriter, r *http.Request) {
	m := h.m
	mfs, err := m.reg.Gather()
	if err != nil { // as promhttp's HTTPErrorOnError
		http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
		return
	}
	d, release, err := h.metrics.get(r.Context())
	if err != nil {
		return // the client went away while a render ran
	}
	defer release()
	hd := w.Header()
	hd.Add("Vary", "Accept")
	hd.Add("Vary", "Accept-Encoding")
	hd.Set("Content-Type", metricsContentType)
	var out io.Writer = newSender(w, time.Now, h.stall, writeTotal)
	if acceptsGzip(r.Header.Values("Accept-Encoding")) && tryAcquire(m.gzips) {
		defer func() { <-m.gzips }()
		hd.Set("Content-Encoding", "gzip")
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(out)
		defer func() {
			gz.Close()
			gz.Reset(nil)
			gzipPool.Put(gz)
		}()
		out = gz
	}
	bw := bufPool.Get().(*bufio.Writer)
	bw.Reset(out)
	defer func() {
		bw.Reset(nil)
		bufPool.Put(bw)
	}()
	filter := nameFilter(r)
	for _, mf := range mfs {
		if filter == nil || filter[mf.GetName()] {
			if _, err := expfmt.MetricFamilyToText(bw, mf); err != nil {
				return // the client went away
			}
		}
	}
	tw := &textWriter{w: bw, filter: filter}
	m.coll.writeReady(tw, status.SummaryOf(m.coll.src))
	if filter == nil {
		bw.Write(d.body) // straight to out once the buffer is empty: no copy
	} else {
		for _, f := range d.fams {
			if filter[f.name] {
				bw.Write(d.body[f.start:f.end])
			}
		}
	}
	bw.Flush()
}

// tryAcquire takes a slot of sem if one is free.
func tryAcquire(sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// renderMetrics renders the families of the Source's status now, all but
// rhi_ready (judged at each request), with the index of their blocks for
// name[]; sizeHint is the last document's size.
func (m *Metrics) renderMetrics(sizeHint int) *doc {
	var b bytes.Buffer
	b.Grow(sizeHint + sizeHint/8)
	bw := bufio.NewWriterSize(&b, 32<<10)
	s := m.coll.src.Status()
	m.coll.writeRest(&textWriter{w: bw}, &s)
	bw.Flush()
	return &doc{body: b.Bytes(), fams: families(b.Bytes())}
}

// families indexes the family blocks of a text exposition: each begins
// with its "# HELP name " line and ends where the next begins.
func families(body []byte) []span {
	var out []span
	for i := 0; i < len(body); {
		if bytes.HasPrefix(body[i:], []byte("# HELP ")) {
			name := body[i+len("# HELP "):]
			if j := bytes.IndexByte(name, ' '); j >= 0 {
				name = name[:j]
			}
			if n := len(out); n > 0 {
				out[n-1].end = i
			}
			out = append(out, span{name: string(name), start: i, end: len(body)})
		}
		j := bytes.IndexByte(body[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return out
}

// nameFilter is the request's name[] parameters as a set; nil without.
func nameFilter(r *http.Request) map[string]bool {
	if r.URL == nil || r.URL.RawQuery == "" {
		return nil
	}
	names := r.URL.Query()["name[]"]
	if len(names) == 0 {
		return nil
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// acceptsGzip says whether promhttp would have gzipped for these
// Accept-Encoding headers: offering identity then gzip, it picks gzip
// when gzip (or *) has a higher q than identity (or *) and one above 0.
func acceptsGzip(headers []string) bool {
	qIdentity, qGzip := -1.0, -1.0
	for _, h := range headers {
		for h != "" {
			var spec string
			spec, h, _ = strings.Cut(h, ",")
			coding, params, _ := strings.Cut(spec, ";")
			coding = strings.TrimSpace(coding)
			q := qValue(params)
			if q < 0 {
				continue // a malformed q: promhttp's parser drops the rest
			}
			if (coding == "*" || strings.EqualFold(coding, "identity")) && q > qIdentity {
				qIdentity = q
			}
			if (coding == "*" || strings.EqualFold(coding, "gzip")) && q > qGzip {
				qGzip = q
			}
		}
	}
	return qGzip > qIdentity && qGzip > 0
}

// qValue is the q parameter of an Accept-Encoding entry: 1 without one,
// -1 if it does not parse.
func qValue(params string) float64 {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || q < 0 || q > 1 {
			return -1
		}
		return q
	}
	return 1
}
