package statushttp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/rhi-daemon/rhi/internal/status"
)

// Metrics holds the instruments the daemon feeds as events happen; the rest
// is derived from Source at scrape time.
type Metrics struct {
	reg          *prometheus.Registry
	pollDuration prometheus.Histogram
	reloads      *prometheus.CounterVec
	lastReload   prometheus.Gauge
	reloadOK     prometheus.Gauge
	coll         *collector
	// renders is the one render of a shared document in progress, for
	// every handler on these metrics.
	renders chan struct{}
	// gzips are the gzipped /metrics responses in progress.
	gzips chan struct{}
}

// maxGzip is how many /metrics responses are gzipped at once; each holds
// ~1.2 MiB of compressor state while its client reads. Beyond, a response
// is sent plain, which every client accepts.
const maxGzip = 4

// NewMetrics registers rhi's metrics, the Go runtime's and the process's;
// the families of the daemon's status are written by m.coll at scrape
// time, outside the registry.
func NewMetrics(src status.Source, version string) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		pollDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rhi_poll_duration_seconds",
			Help:    "Wall time of one poll of the APISIX control API (all upstreams).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rhi_config_reloads_total",
			Help: "Configuration reloads by result (success, failure).",
		}, []string{"result"}),
		lastReload: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rhi_config_last_reload_success_timestamp_seconds",
			Help: "When the configuration was last loaded successfully (start-up counts).",
		}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rhi_config_last_reload_successful",
			Help: "1 if the last configuration reload succeeded.",
		}),
		coll:    &collector{src: src, now: time.Now},
		renders: make(chan struct{}, 1),
		gzips:   make(chan struct{}, maxGzip),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rhi_build_info",
		Help: "rhi's version and Go version; always 1.",
	}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	m.reg.MustRegister(m.pollDuration, m.reloads, m.lastReload, m.reloadOK, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Reloaded(true, time.Now())
	return m
}

// ObservePoll records one poll; it fits the daemon's OnPoll hook.
func (m *Metrics) ObservePoll(took time.Duration, _ int) {
	m.pollDuration.Observe(took.Seconds())
}

// Reloaded records a configuration reload.
func (m *Metrics) Reloaded(ok bool, at time.Time) {
	if !ok {
		m.reloads.WithLabelValues("failure").Inc()
		m.reloadOK.Set(0)
		return
	}
	m.reloads.WithLabelValues("success").Inc()
	m.reloadOK.Set(1)
	m.lastReload.Set(float64(at.Unix()))
}

// Handler serves /metrics, /status and /healthz. Each call has its own
// shared documents (one for each listener: readers of one cannot make
// those of the other wait or see an older document); renders are one at a
// time for every handler on the same Metrics.
//
// What readers cost, whatever their number and speed: /status and the
// status part of /metrics are rendered once per version of the Source
// (Versioned) and the bytes sent to every reader from the same slice, at
// most maxLiveDocs of each kind held at once, none once the readers are
// done; each write must be taken within writeStall and the whole response
// within writeTotal; gzip, which needs ~1 MiB of state per response, is
// given to maxGzip responses at a time and the others are sent plain. At
// 10,000 VIPs a document is ~9 MB of /metrics or ~8 MB of /status, so one
// listener's readers hold at most ~35 MB on top of one render's ~20 MB
// (BENCHMARKS.md, "Readers").
func Handler(src status.Source, m *Metrics, now func() time.Time) http.Handler {
	return newHandler(src, m, now, writeStall)
}

// newHandler is Handler with the stall after which a client is cut off.
func newHandler(src status.Source, m *Metrics, now func() time.Time, stall time.Duration) http.Handler {
	h := &handlers{src: src, m: m, now: now, stall: stall}
	h.status = &shared{version: versionOf(src), renders: m.renders, render: h.renderStatus}
	h.metrics = &shared{version: versionOf(m.coll.src), renders: m.renders, render: m.renderMetrics}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", h.serveMetrics) // the registry's families, then the shared document (collector.go)
	mux.HandleFunc("GET /status", h.serveStatus)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := status.Judge(status.SummaryOf(src), now()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// handlers are one Handler's: its Source, metrics and shared documents.
type handlers struct {
	src             status.Source
	m               *Metrics
	now             func() time.Time
	stall           time.Duration // writeStall
	status, metrics *shared
}

// versionOf is src's StatusVersion if it is Versioned.
func versionOf(src status.Source) func() (uint64, bool) {
	v, ok := src.(status.Versioned)
	return func() (uint64, bool) {
		if !ok {
			return 0, false
		}
		return v.StatusVersion()
	}
}

// serveStatus sends the shared /status document.
func (h *handlers) serveStatus(w http.ResponseWriter, r *http.Request) {
	d, release, err := h.status.get(r.Context())
	if err != nil {
		return // the client went away while a render ran
	}
	defer release()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(d.body)))
	newSender(w, time.Now, h.stall, writeTotal).Write(d.body)
}

// renderStatus renders /status of the Source's Status now; sizeHint is
// the last document's size, so that the buffer is grown once.
func (h *handlers) renderStatus(sizeHint int) *doc {
	var b bytes.Buffer
	b.Grow(sizeHint + sizeHint/8)
	writeStatus(&b, h.src.Status())
	return &doc{body: b.Bytes()}
}

// writeStatus writes s as a json.Encoder indented by two spaces would, but
// one VIP at a time: the encoder holds the whole document twice (compact,
// then indented) in buffers that grow by doubling, ~60 MB of garbage for a
// /status of 10,000 VIPs, where this holds one VIP's. Errors
// are the client's (it went away): there is no one to tell.
func writeStatus(w io.Writer, s status.Status) {
	bw := bufio.NewWriterSize(w, 32<<10)
	defer bw.Flush()
	if len(s.VIPs) == 0 {
		enc := json.NewEncoder(bw)
		enc.SetIndent("", "  ")
		enc.Encode(s)
		return
	}
	vips := s.VIPs
	s.VIPs = []status.VIPStatus{} // the last field: its "[]" ends the document
	head, err := json.MarshalIndent(s, "", "  ")
	cut := bytes.LastIndex(head, []byte("[]"))
	if err != nil || cut < 0 {
		return // as the encoder: nothing written on an error
	}
	bw.Write(head[:cut])
	bw.WriteString("[\n")
	var one bytes.Buffer // one VIP; the encoder reuses its buffers too
	enc := json.NewEncoder(&one)
	enc.SetIndent("    ", "  ")
	for i := range vips {
		one.Reset()
		if err := enc.Encode(&vips[i]); err != nil {
			return
		}
		bw.WriteString("    ")
		bw.Write(bytes.TrimSuffix(one.Bytes(), []byte("\n")))
		if i < len(vips)-1 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
	}
	bw.WriteString("  ]")
	bw.Write(head[cut+2:]) // "\n}"
	bw.WriteByte('\n')
}
