package status

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/common/expfmt"
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
// expfmt, then the families of the daemon's status, written by the
// collector straight into the response, gzipped if the client asks (as
// promhttp did, but faster: see gzipPool). Nothing holds the whole document. The request's name[]
// parameters select families, as promhttp's did.
func (m *Metrics) serveMetrics(w http.ResponseWriter, r *http.Request) {
	mfs, err := m.reg.Gather()
	if err != nil { // as promhttp's HTTPErrorOnError
		http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Add("Vary", "Accept")
	h.Add("Vary", "Accept-Encoding")
	h.Set("Content-Type", metricsContentType)
	var out io.Writer = w
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(w)
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
	tw := &textWriter{w: bw, filter: nameFilter(r)}
	for _, mf := range mfs {
		if tw.filter == nil || tw.filter[mf.GetName()] {
			if _, err := expfmt.MetricFamilyToText(bw, mf); err != nil {
				return // the client went away
			}
		}
	}
	s := m.coll.src.Status()
	m.coll.write(tw, &s)
	bw.Flush()
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
