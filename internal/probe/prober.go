package probe

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is what one probe says about the data path.
type Outcome int

// The zero Outcome is Unreachable: a Result nobody filled in says that
// nothing answered, never that the data path works.
const (
	// Unreachable: the request could not be sent or was not answered in
	// time (connection refused or reset, timeout). A failed poll for the
	// VIP, like an unreachable control API.
	Unreachable Outcome = iota
	// Up: an HTTP answer with a status in ExpectStatus.
	Up
	// Down: an answer that the data plane cannot serve: another status,
	// or a TLS handshake refused or failing verification.
	Down
)

func (o Outcome) String() string {
	switch o {
	case Up:
		return "up"
	case Down:
		return "down"
	case Unreachable:
		return "unreachable"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// MarshalText renders the outcome as in String, for JSON and logs.
func (o Outcome) MarshalText() ([]byte, error) {
	if o < Unreachable || o > Down {
		return nil, fmt.Errorf("probe outcome %d: unknown", int(o))
	}
	return []byte(o.String()), nil
}

// Result is one spec's probe in one poll.
type Result struct {
	Outcome Outcome
	// Status is the HTTP status received; 0 when there was none.
	Status int
	// Latency is the time from sending the request to its response
	// headers, or to the failure; 0 when nothing was sent.
	Latency time.Duration
	// Err says why the outcome is not Up (the status and what was
	// expected, or the cause); nil when Up.
	Err error
}

// Defaults of Options fields left zero.
const (
	DefaultMaxBodyBytes = 64 << 10
	DefaultMaxInFlight  = 16
)

// Options configures a Prober. Zero fields take the defaults.
type Options struct {
	// Version is sent as "User-Agent: rhi/<Version>"; empty sends "rhi/dev".
	Version string
	// MaxBodyBytes is how much of an answer's body is read (and thrown
	// away) so that its connection can serve the next poll. A longer body
	// is not read further: its connection is closed instead.
	MaxBodyBytes int64
	// MaxInFlight bounds the requests one Probe call runs at once.
	MaxInFlight int
}

// Prober sends probes. It keeps connections alive between polls: one
// transport per distinct TLS setting, those a poll does not use are
// dropped. It is safe for concurrent use, though rhi probes one poll at a
// time.
type Prober struct {
	userAgent   string
	maxBody     int64
	maxInFlight int
	now         func() time.Time // tests replace it to judge timeouts
	rootCAs     *x509.CertPool   // nil: the system's; tests set their own

	mu         sync.Mutex
	transports map[tlsConf]*http.Client
}

// New returns a Prober.
func New(opts Options) *Prober {
	return &Prober{
		userAgent:   "rhi/" + cmp.Or(opts.Version, "dev"),
		maxBody:     cmp.Or(max(opts.MaxBodyBytes, 0), DefaultMaxBodyBytes),
		maxInFlight: cmp.Or(max(opts.MaxInFlight, 0), DefaultMaxInFlight),
		now:         time.Now,
		transports:  make(map[tlsConf]*http.Client),
	}
}

// tlsConf is what sets one transport apart from another: connections
// made with one server name or verification setting must not serve
// another. The zero value serves http and https with default settings.
type tlsConf struct {
	serverName string
	insecure   bool
}

// target is what one request is sent to; specs with the same target share
// it.
type target struct {
	url  string
	host string
	tls  tlsConf
}

// targetOf returns where s sends its request. For https the server name is
// TLSServerName, else the host of Host: the name the VIP's clients send.
func targetOf(s Spec) target {
	t := target{url: s.URL, host: s.Host}
	if strings.HasPrefix(strings.ToLower(s.URL), "https:") {
		t.tls = tlsConf{serverName: s.TLSServerName, insecure: s.InsecureSkipVerify}
		if t.tls.serverName == "" && s.Host != "" {
			t.tls.serverName = hostOnly(s.Host)
		}
	}
	return t
}

func hostOnly(h string) string {
	if !strings.Contains(h, ":") { // spares SplitHostPort's error, an allocation per VIP
		return h
	}
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// call is one request of a poll and its answer.
type call struct {
	target  target
	timeout time.Duration // the longest of the specs sharing it
	status  int
	latency time.Duration
	err     error
	down    bool // err is an answer that the data plane cannot serve
}

// Probe sends one request per distinct target of specs (URL, Host and TLS
// settings), all at once, and returns one Result per spec, in order. Each
// request ends at ctx's deadline or after the longest Timeout of the specs
// sharing it, whichever comes first; a spec whose own Timeout passed
// before the answer came is Unreachable. Specs are expected to have passed
// Validate; one that did not is Unreachable without a request.
//
// Pass every spec of the poll: connections of TLS settings that no spec
// uses are closed. The body is read (at most MaxBodyBytes) within the same
// deadline; its content is not judged, and neither is a failure to read
// it once the status has come.
func (p *Prober) Probe(ctx context.Context, specs []Spec) []Result {
	calls, callIdx := group(specs)
	clients := p.clients(calls)
	p.run(ctx, calls, clients)

	out := make([]Result, len(specs))
	for i, s := range specs {
		out[i] = judge(s, &calls[callIdx[i]])
	}
	return out
}

// group returns the distinct targets of specs, each with the longest
// timeout of the specs sharing it, and the index of each spec's target.
func group(specs []Spec) (calls []call, callIdx []int) {
	calls = make([]call, 0, min(len(specs), 16))
	callOf := make(map[target]int, cap(calls))
	callIdx = make([]int, len(specs))
	for i, s := range specs {
		t := targetOf(s)
		c, ok := callOf[t]
		if !ok {
			c = len(calls)
			callOf[t] = c
			calls = append(calls, call{target: t})
		}
		calls[c].timeout = max(calls[c].timeout, s.Timeout)
		callIdx[i] = c
	}
	return calls, callIdx
}

// run sends every call, at most maxInFlight at a time.
func (p *Prober) run(ctx context.Context, calls []call, clients []*http.Client) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(p.maxInFlight, len(calls)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(calls) {
					return
				}
				p.send(ctx, &calls[i], clients[i])
			}
		})
	}
	wg.Wait()
}

// clients returns the client of each call's TLS setting, making those
// missing and dropping (with their idle connections) those no call uses.
func (p *Prober) clients(calls []call) []*http.Client {
	out := make([]*http.Client, len(calls))
	used := make(map[tlsConf]bool, 2)
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range calls {
		conf := calls[i].target.tls
		hc, ok := p.transports[conf]
		if !ok {
			hc = p.newClient(conf)
			p.transports[conf] = hc
		}
		used[conf] = true
		out[i] = hc
	}
	for conf, hc := range p.transports {
		if !used[conf] {
			hc.CloseIdleConnections()
			delete(p.transports, conf)
		}
	}
	return out
}

// CloseIdleConnections closes the connections kept alive between polls.
// Call it when the Prober is dropped; a later Probe dials again.
func (p *Prober) CloseIdleConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, hc := range p.transports {
		hc.CloseIdleConnections()
	}
}

func (p *Prober) newClient(conf tlsConf) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			// The probe goes to a local listener; an http_proxy meant for
			// the outside world must not capture it.
			Proxy:       nil,
			DialContext: (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig: &tls.Config{
				ServerName:         conf.serverName,
				RootCAs:            p.rootCAs,
				InsecureSkipVerify: conf.insecure, //nolint:gosec // the operator's choice, warned about by check-config
				MinVersion:         tls.VersionTLS12,
			},
			// One request per target per poll: two idle connections per
			// host are plenty, and bound what a poll leaves open.
			MaxIdleConnsPerHost: 2,
			// Below the 60 s keepalive_timeout of APISIX's nginx.
			IdleConnTimeout:        50 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
			DisableCompression:     true,
		},
		// A redirect is an answer (its status is judged); following it
		// would probe something else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// send makes c's request and records its answer in c.
func (p *Prober) send(ctx context.Context, c *call, hc *http.Client) {
	if c.timeout <= 0 {
		c.err = errors.New("no timeout: spec not validated")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.target.url, nil)
	if err != nil {
		c.err = fmt.Errorf("GET %s: bad request: spec not validated", Mask(c.target.url))
		return
	}
	if c.target.host != "" {
		req.Host = c.target.host
	}
	req.Header.Set("User-Agent", p.userAgent)
	start := p.now()
	resp, err := hc.Do(req)
	c.latency = p.now().Sub(start)
	if err != nil {
		c.down = refused(err)
		c.err = fmt.Errorf("GET %s%s: %w", Mask(c.target.url), hostNote(c.target.host), cause(err))
		return
	}
	c.status = resp.StatusCode
	// Reading the body to its end lets the transport reuse the connection;
	// past the bound, Close drops the connection instead of reading on.
	_, _ = io.CopyN(io.Discard, resp.Body, p.maxBody)
	_ = resp.Body.Close()
}

func hostNote(host string) string {
	if host == "" {
		return ""
	}
	return " (host " + host + ")"
}

// cause strips *url.Error, which repeats the method and the unmasked URL.
func cause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// judge turns c's answer into s's result.
func judge(s Spec, c *call) Result {
	r := Result{Status: c.status, Latency: c.latency, Err: c.err}
	switch {
	case c.err != nil && c.down:
		r.Outcome = Down
	case c.err != nil:
		r.Outcome = Unreachable
	case s.Timeout > 0 && c.latency > s.Timeout:
		// The answer came, but after this spec's own timeout: a longer
		// timeout of another spec kept the shared request waiting.
		r.Outcome = Unreachable
		r.Err = fmt.Errorf("GET %s%s: no answer within %s", Mask(s.URL), hostNote(s.Host), s.Timeout)
	case slices.Contains(s.ExpectStatus, c.status):
		r.Outcome = Up
	default:
		r.Outcome = Down
		r.Err = fmt.Errorf("GET %s%s: status %d (expected %s)", Mask(s.URL), hostNote(s.Host), c.status, statusList(s.ExpectStatus))
	}
	return r
}

func statusList(codes []int) string {
	var b strings.Builder
	for i, c := range codes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, c)
	}
	return b.String()
}
