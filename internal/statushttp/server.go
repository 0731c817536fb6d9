package statushttp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Options bound a status server. Zero fields take the defaults below.
type Options struct {
	// MaxConns is how many connections are served at once; one more is
	// closed as soon as it is accepted, so that a flood of connections can
	// never take the file descriptors the polls need.
	MaxConns int
	// ReadHeaderTimeout bounds the wait for a request's headers, a new
	// connection's first one included.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no request.
	IdleTimeout time.Duration
	// RetryMin and RetryMax bound the delay between attempts to listen: it
	// starts at RetryMin and doubles up to RetryMax.
	RetryMin, RetryMax time.Duration

	// released, when set, is called with a connection's remote address
	// after it gives its slot back: tests wait on it instead of polling.
	released func(remote net.Addr)
}

// Defaults of Options. Prometheus scrapes every 15 s or more and opens a
// connection or two; 64 leaves room for several scrapers and probes.
const (
	DefaultMaxConns          = 64
	DefaultReadHeaderTimeout = 3 * time.Second
	DefaultIdleTimeout       = 10 * time.Second
	DefaultRetryMin          = time.Second
	DefaultRetryMax          = 30 * time.Second
)

func (o Options) withDefaults() Options {
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.RetryMin <= 0 {
		o.RetryMin = DefaultRetryMin
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(DefaultRetryMax, o.RetryMin)
	}
	return o
}

// Listen opens the listener a server serves on. Serve calls it again after
// a failure.
type Listen func() (net.Listener, error)

// TCP listens on the TCP address addr (status_listen).
func TCP(addr string) Listen {
	return func() (net.Listener, error) { return net.Listen("tcp", addr) }
}

// Serve serves h on what listen opens until ctx is done, then shuts the
// server down and returns. name is the config key the listener comes from
// (status_listen, control_socket), for the logs.
//
// Failing to listen (the port is taken, say) or a listener that fails
// later is logged and tried again after a delay that doubles from
// RetryMin to RetryMax: the routing loop never depends on this server.
func Serve(ctx context.Context, name string, listen Listen, h http.Handler, o Options, log logrus.FieldLogger) {
	o = o.withDefaults()
	log = log.WithField("listener", name)
	delay := o.RetryMin
	var lastErr string
	for {
		ln, err := listen()
		if err == nil {
			log.WithField("addr", ln.Addr().String()).Info("serving /metrics, /status, /healthz")
			delay, lastErr = o.RetryMin, ""
			err = serveOn(ctx, ln, h, o, log)
		}
		if ctx.Err() != nil {
			return
		}
		entry := log.WithError(err).WithField("retry_in", delay.String())
		if err.Error() != lastErr {
			entry.Error("cannot serve; the routing loop goes on, and this is tried again")
		} else {
			entry.Warn("still cannot serve")
		}
		lastErr = err.Error()
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, o.RetryMax)
	}
}

// serveOn serves h on ln until ctx is done (nil) or the server fails.
func serveOn(ctx context.Context, ln net.Listener, h http.Handler, o Options, log logrus.FieldLogger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
	}
	errc := make(chan error, 1)
	ll := newLimitListener(ln, o.MaxConns, log)
	ll.released = o.released
	go func() { errc <- srv.Serve(ll) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// sendBuffer is the socket send buffer of a TCP connection (SO_SNDBUF;
// the kernel doubles it). Left to itself the kernel grows it up to
// net.ipv4.tcp_wmem's maximum, 4 MiB by default, for a client that stalls:
// 64 of them would pin 256 MiB of the kernel's memory, charged to rhi's
// cgroup. 128 KiB still sends a 9 MB /metrics across a LAN in well under
// a second (it caps throughput at the buffer per round trip).
const sendBuffer = 128 << 10

// refuseLogEvery spaces the warnings about refused connections.
const refuseLogEvery = time.Minute

// limitListener serves at most cap(slots) connections at once. One over
// the limit is accepted and closed at once: the client sees the connection
// closed, the process holds at most max descriptors for it, and the
// kernel's backlog does not fill up behind the slow ones.
type limitListener struct {
	net.Listener
	slots    chan struct{}
	log      logrus.FieldLogger
	released func(net.Addr) // Options.released
	// Accept runs on one goroutine (http.Server's), which alone touches
	// these.
	refused int
	logged  time.Time
}

func newLimitListener(ln net.Listener, max int, log logrus.FieldLogger) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), log: log}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetWriteBuffer(sendBuffer) // best effort: the kernel's default is bounded too
			}
			return &limitConn{Conn: c, release: l.release}, nil
		default:
		}
		c.Close()
		l.refused++
		if now := time.Now(); now.Sub(l.logged) >= refuseLogEvery {
			l.log.WithFields(logrus.Fields{"max_conns": cap(l.slots), "refused": l.refused}).Warn("too many connections: refusing the excess")
			l.refused, l.logged = 0, now
		}
	}
}

// release gives c's slot back.
func (l *limitListener) release(c net.Conn) {
	<-l.slots
	if l.released != nil {
		l.released(c.RemoteAddr())
	}
}

// limitConn gives its slot back when closed, once.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func(net.Conn)
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.release(c.Conn) })
	return err
}

// CloseWrite lets http.Server half-close a TCP connection as it would
// without the wrapper.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
