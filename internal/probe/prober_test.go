package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// quiet drops the handshake errors TLS servers log for the failures the
// tests cause on purpose.
var quiet = log.New(io.Discard, "", 0)

// spec returns a valid spec for url with the given expected statuses.
func spec(url string, expect ...int) Spec {
	s := Defaults()
	s.URL = url
	if len(expect) > 0 {
		s.ExpectStatus = expect
	}
	s.Timeout = 10 * time.Second // only a failing test waits for it
	return s
}

// statusServer answers every request with status and counts requests per
// Host header.
type statusServer struct {
	*httptest.Server
	status atomic.Int64
	mu     sync.Mutex
	hosts  map[string]int
	agents []string
}

func newStatusServer(t *testing.T, status int) *statusServer {
	s := &statusServer{hosts: map[string]int{}}
	s.status.Store(int64(status))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hosts[r.Host]++
		s.agents = append(s.agents, r.UserAgent())
		s.mu.Unlock()
		w.WriteHeader(int(s.status.Load()))
		_, _ = w.Write([]byte("ok\n"))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *statusServer) requests(host string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hosts[host]
}

func probeOne(t *testing.T, p *Prober, s Spec) Result {
	t.Helper()
	res := p.Probe(context.Background(), []Spec{s})
	if len(res) != 1 {
		t.Fatalf("Probe(1 spec) = %d results", len(res))
	}
	return res[0]
}

func TestProbeUp(t *testing.T) {
	srv := newStatusServer(t, 200)
	p := New(Options{Version: "1.2.3"})
	defer p.CloseIdleConnections()
	s := spec(srv.URL + "/healthz")
	s.Host = "api.example.com"
	r := probeOne(t, p, s)
	if r.Outcome != Up || r.Status != 200 || r.Err != nil || r.Latency <= 0 {
		t.Errorf("probe of a 200 = %+v, want up, status 200, a latency, no error", r)
	}
	if n := srv.requests("api.example.com"); n != 1 {
		t.Errorf("server saw %d requests with Host api.example.com, want 1 (hosts %v)", n, srv.hosts)
	}
	if len(srv.agents) != 1 || srv.agents[0] != "rhi/1.2.3" {
		t.Errorf("User-Agent = %q, want [rhi/1.2.3]", srv.agents)
	}
}

func TestProbeDown(t *testing.T) {
	srv := newStatusServer(t, 503)
	p := New(Options{})
	defer p.CloseIdleConnections()
	r := probeOne(t, p, spec(srv.URL+"/healthz"))
	if r.Outcome != Down || r.Status != 503 || r.Err == nil || !strings.Contains(r.Err.Error(), "status 503 (expected 200)") {
		t.Errorf("probe of a 503 = %+v (err %v), want down, status 503, a reason", r, r.Err)
	}
	// 503 is up for a spec that expects it.
	if r := probeOne(t, p, spec(srv.URL+"/healthz", 200, 503)); r.Outcome != Up {
		t.Errorf("probe of a 503 expecting [200 503] = %+v, want up", r)
	}
}

func TestProbeUnreachableClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := New(Options{})
	r := probeOne(t, p, spec("http://"+addr+"/healthz"))
	if r.Outcome != Unreachable || r.Status != 0 || !errors.Is(r.Err, syscall.ECONNREFUSED) {
		t.Errorf("probe of a closed port = %+v (err %v), want unreachable, connection refused", r, r.Err)
	}
}

// hangingServer answers nothing until the test ends.
func hangingServer(t *testing.T) *httptest.Server {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: Close waits for handlers
	return srv
}

func TestProbeUnreachableHangsPastCallersDeadline(t *testing.T) {
	t.Parallel() // waits out a 50 ms deadline, as do the other Hangs tests: together
	srv := hangingServer(t)
	p := New(Options{})
	defer p.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := p.Probe(ctx, []Spec{spec(srv.URL)})[0]
	if r.Outcome != Unreachable || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("probe of a hanging server = %+v (err %v), want unreachable, deadline exceeded", r, r.Err)
	}
}

func TestProbeUnreachableHangsPastOwnTimeout(t *testing.T) {
	t.Parallel() // waits out a 50 ms deadline, as do the other Hangs tests: together
	srv := hangingServer(t)
	p := New(Options{})
	defer p.CloseIdleConnections()
	s := spec(srv.URL)
	s.Timeout = 50 * time.Millisecond
	r := probeOne(t, p, s) // no deadline on the context
	if r.Outcome != Unreachable || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("probe of a hanging server = %+v (err %v), want unreachable, deadline exceeded", r, r.Err)
	}
}

// A TLS handshake that never completes is no answer: Unreachable.
func TestProbeUnreachableTLSHandshakeHangs(t *testing.T) {
	t.Parallel() // waits out a 50 ms deadline, as do the other Hangs tests: together
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		var b [1]byte
		_, _ = c.Read(b[:]) // reads the ClientHello's first byte, answers nothing
		<-t.Context().Done()
		c.Close()
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	p := New(Options{})
	s := spec("https://" + ln.Addr().String() + "/")
	s.Timeout = 50 * time.Millisecond
	if r := probeOne(t, p, s); r.Outcome != Unreachable || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("probe of a silent TLS port = %+v (err %v), want unreachable, deadline exceeded", r, r.Err)
	}
}

// Two specs sharing a target cost one request; each is judged by its own
// expect_status. Another Host is another target.
func TestProbeDedupe(t *testing.T) {
	srv := newStatusServer(t, 503)
	p := New(Options{})
	defer p.CloseIdleConnections()
	a := spec(srv.URL+"/healthz", 200)
	a.Host = "a.example.com"
	b := spec(srv.URL+"/healthz", 503)
	b.Host = "a.example.com"
	b.Timeout = 5 * time.Second
	c := spec(srv.URL+"/healthz", 503)
	c.Host = "c.example.com"
	res := p.Probe(context.Background(), []Spec{a, b, a, c, b})
	want := []Outcome{Down, Up, Down, Up, Up}
	for i, r := range res {
		if r.Outcome != want[i] || r.Status != 503 {
			t.Errorf("result %d = %+v, want %v with status 503", i, r, want[i])
		}
	}
	if n, m := srv.requests("a.example.com"), srv.requests("c.example.com"); n != 1 || m != 1 {
		t.Errorf("requests per host: a %d, c %d; want 1 each", n, m)
	}
}

// Every target is sent at once: the first server answers only once the
// second has its request, which a one-by-one prober would never see.
func TestProbeConcurrent(t *testing.T) {
	second := make(chan struct{})
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-second:
		case <-r.Context().Done():
			return
		}
	}))
	defer first.Close()
	var once sync.Once
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(second) })
	}))
	defer other.Close()
	p := New(Options{})
	defer p.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, r := range p.Probe(ctx, []Spec{spec(first.URL), spec(other.URL)}) {
		if r.Outcome != Up {
			t.Errorf("result %d = %+v (err %v), want up", i, r, r.Err)
		}
	}
}

// Specs sharing a request but not a timeout: the request waits for the
// longest, and a spec whose own timeout passed first is Unreachable.
func TestProbeSharedRequestOwnTimeout(t *testing.T) {
	srv := newStatusServer(t, 200)
	p := New(Options{})
	defer p.CloseIdleConnections()
	t0 := time.Unix(1_700_000_000, 0)
	var calls atomic.Int64
	p.now = func() time.Time { return t0.Add(time.Duration(calls.Add(1)-1) * 2 * time.Second) } // 2 s per request
	short, long := spec(srv.URL), spec(srv.URL)
	short.Timeout, long.Timeout = time.Second, 5*time.Second
	res := p.Probe(context.Background(), []Spec{short, long})
	if res[0].Outcome != Unreachable || res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "no answer within 1s") {
		t.Errorf("1s spec answered in 2s = %+v (err %v), want unreachable", res[0], res[0].Err)
	}
	if res[1].Outcome != Up || res[1].Latency != 2*time.Second {
		t.Errorf("5s spec answered in 2s = %+v, want up in 2s", res[1])
	}
	if n := srv.requests(strings.TrimPrefix(srv.URL, "http://")); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

func TestProbeNoRedirectFollowed(t *testing.T) {
	var followed atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/b", http.StatusFound) })
	mux.HandleFunc("/b", func(w http.ResponseWriter, r *http.Request) { followed.Add(1) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	p := New(Options{})
	defer p.CloseIdleConnections()
	res := p.Probe(context.Background(), []Spec{spec(srv.URL + "/a"), spec(srv.URL+"/a", 302)})
	if res[0].Outcome != Down || res[0].Status != 302 {
		t.Errorf("probe of a redirect = %+v, want down with status 302", res[0])
	}
	if res[1].Outcome != Up {
		t.Errorf("probe of a redirect expecting 302 = %+v, want up", res[1])
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("redirect target got %d requests, want 0", n)
	}
}

// tlsServer is an https server (httptest's certificate: example.com,
// 127.0.0.1, ::1) that records the server names of its handshakes.
type tlsServer struct {
	*httptest.Server
	mu    sync.Mutex
	names []string
}

func newTLSServer(t *testing.T) *tlsServer {
	s := &tlsServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	s.TLS = &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		s.mu.Lock()
		s.names = append(s.names, h.ServerName)
		s.mu.Unlock()
		return nil, nil
	}}
	s.Config.ErrorLog = quiet
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *tlsServer) lastName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.names) == 0 {
		return "<none>"
	}
	return s.names[len(s.names)-1]
}

func TestProbeTLS(t *testing.T) {
	srv := newTLSServer(t)
	trusted := x509.NewCertPool()
	trusted.AddCert(srv.Certificate())
	tests := []struct {
		name     string
		trust    bool
		edit     func(*Spec)
		want     Outcome
		wantName string // the server name the handshake sent
	}{
		{"server name matches", true, func(s *Spec) { s.TLSServerName = "example.com" }, Up, "example.com"},
		{"host gives the server name", true, func(s *Spec) { s.Host = "example.com:443" }, Up, "example.com"},
		{"server name wins over host", true, func(s *Spec) { s.Host, s.TLSServerName = "example.com", "other.example.org" }, Down, "other.example.org"},
		{"ip url, no name", true, func(*Spec) {}, Up, ""},
		{"wrong server name", true, func(s *Spec) { s.TLSServerName = "wrong.example.org" }, Down, "wrong.example.org"},
		{"unknown authority", false, func(s *Spec) { s.TLSServerName = "example.com" }, Down, "example.com"},
		{"insecure accepts unknown authority", false, func(s *Spec) { s.TLSServerName, s.InsecureSkipVerify = "example.com", true }, Up, "example.com"},
		{"insecure accepts wrong name", false, func(s *Spec) { s.TLSServerName, s.InsecureSkipVerify = "wrong.example.org", true }, Up, "wrong.example.org"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(Options{})
			defer p.CloseIdleConnections()
			if tt.trust {
				p.rootCAs = trusted
			}
			s := spec(srv.URL + "/healthz")
			tt.edit(&s)
			r := probeOne(t, p, s)
			if r.Outcome != tt.want {
				t.Errorf("probe %+v = %+v (err %v), want %v", s, r, r.Err, tt.want)
			}
			if got := srv.lastName(); got != tt.wantName {
				t.Errorf("server name sent = %q, want %q", got, tt.wantName)
			}
		})
	}
}

// Plain HTTP on the https URL's port is an answer that TLS is broken.
func TestProbeTLSToPlainHTTPIsDown(t *testing.T) {
	srv := newStatusServer(t, 200)
	p := New(Options{})
	defer p.CloseIdleConnections()
	r := probeOne(t, p, spec(strings.Replace(srv.URL, "http://", "https://", 1)))
	if r.Outcome != Down || !errors.Is(r.Err, http.ErrSchemeMismatch) {
		t.Errorf("https probe of an http port = %+v (err %v), want down, scheme mismatch", r, r.Err)
	}
}

// A server that refuses the handshake (it wants a client certificate)
// sends an alert: Down.
func TestProbeTLSAlertIsDown(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert, MaxVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = quiet
	srv.StartTLS()
	defer srv.Close()
	p := New(Options{})
	defer p.CloseIdleConnections()
	s := spec(srv.URL)
	s.InsecureSkipVerify = true
	r := probeOne(t, p, s)
	var op *net.OpError
	if r.Outcome != Down || !errors.As(r.Err, &op) || op.Op != "remote error" {
		t.Errorf("probe of a server refusing the handshake = %+v (err %v), want down, a remote error", r, r.Err)
	}
}

// A body of gigabytes is neither read nor held: the probe reads at most
// MaxBodyBytes and drops the connection.
func TestProbeHugeBody(t *testing.T) {
	var written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10000000000") // 10 GB, never all sent
		buf := make([]byte, 64<<10)
		for written.Load() < 10_000_000_000 {
			n, err := w.Write(buf)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	p := New(Options{})
	defer p.CloseIdleConnections()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := probeOne(t, p, spec(srv.URL))
	runtime.ReadMemStats(&after)
	if r.Outcome != Up {
		t.Fatalf("probe of a huge body = %+v (err %v), want up", r, r.Err)
	}
	srv.Close() // waits for the handler, which ends when the client hangs up
	if n := written.Load(); n > 64<<20 {
		t.Errorf("server wrote %d bytes before the probe hung up, want well under 64 MiB", n)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("probing a huge body allocated %d bytes, want under 8 MiB", grew)
	}
}

// Two polls use one connection; CloseIdleConnections drops it.
func TestProbeReusesConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	p := New(Options{})
	defer p.CloseIdleConnections()
	for poll := range 2 {
		if r := probeOne(t, p, spec(srv.URL+"/healthz")); r.Outcome != Up {
			t.Fatalf("poll %d: %+v (err %v), want up", poll, r, r.Err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("two polls opened %d connections, want 1", n)
	}
	p.CloseIdleConnections()
	if r := probeOne(t, p, spec(srv.URL+"/healthz")); r.Outcome != Up {
		t.Fatalf("poll after CloseIdleConnections: %+v, want up", r)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("a poll after CloseIdleConnections: %d connections in all, want 2", n)
	}
}

// A poll that no longer uses a TLS setting drops its transport.
func TestProbeDropsUnusedTransports(t *testing.T) {
	srv := newStatusServer(t, 200)
	p := New(Options{})
	defer p.CloseIdleConnections()
	tlsSpec := spec("https://127.0.0.1:1/")
	tlsSpec.TLSServerName = "example.com"
	tlsSpec.Timeout = time.Millisecond
	p.Probe(context.Background(), []Spec{spec(srv.URL), tlsSpec})
	if n := len(p.transports); n != 2 {
		t.Fatalf("after a poll with two TLS settings: %d transports, want 2", n)
	}
	p.Probe(context.Background(), []Spec{spec(srv.URL)})
	if _, ok := p.transports[tlsConf{}]; len(p.transports) != 1 || !ok {
		t.Errorf("after a poll with only http: transports %v, want only the default", p.transports)
	}
}

func TestProbeInvalidSpecSendsNothing(t *testing.T) {
	srv := newStatusServer(t, 200)
	p := New(Options{})
	defer p.CloseIdleConnections()
	bad := spec(srv.URL)
	bad.Timeout = 0
	res := p.Probe(context.Background(), []Spec{bad, spec("http://[::1/")})
	for i, r := range res {
		if r.Outcome != Unreachable || r.Err == nil {
			t.Errorf("invalid spec %d = %+v, want unreachable with an error", i, r)
		}
	}
	if n := srv.requests(strings.TrimPrefix(srv.URL, "http://")); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

func TestProbeErrorMasksUserInfo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := New(Options{})
	r := probeOne(t, p, spec("http://u:hunter2@"+addr+"/"))
	if r.Err == nil || strings.Contains(r.Err.Error(), "hunter2") {
		t.Errorf("error %v shows the password", r.Err)
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{Up: "up", Down: "down", Unreachable: "unreachable", Outcome(9): "outcome(9)"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(o), got, want)
		}
	}
	for o, want := range map[Outcome]string{Up: "up", Down: "down", Unreachable: "unreachable"} {
		if b, err := o.MarshalText(); err != nil || string(b) != want {
			t.Errorf("%v.MarshalText() = %q, %v; want %q", o, b, err, want)
		}
	}
	if b, err := Outcome(9).MarshalText(); err == nil {
		t.Errorf("Outcome(9).MarshalText() = %q, want an error", b)
	}
	var zero Result
	if zero.Outcome != Unreachable {
		t.Errorf("zero Result's outcome = %v, want unreachable", zero.Outcome)
	}
}
