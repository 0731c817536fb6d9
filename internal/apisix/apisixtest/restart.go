package apisixtest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// restartable is a listener that Restart can take down (connections are
// refused and open ones closed) and bring back on the same address.
// Accept blocks while it is down, so an http.Server serving it carries on.
type restartable struct {
	network, addr string // addr is the resolved address, to listen again on the same port

	mu     sync.Mutex
	ln     net.Listener // nil while down
	up     chan struct{}
	conns  map[net.Conn]struct{}
	closed bool
}

// Listen opens a listener on network and address that Restart takes down
// and brings back; serve the API (or the data path) on it. Start and
// StartData use it.
func (s *Server) Listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	l := &restartable{network: network, addr: ln.Addr().String(), ln: ln, up: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(l.up)
	s.lnMu.Lock()
	s.listeners = append(s.listeners, l)
	s.lnMu.Unlock()
	return l, nil
}

func (l *restartable) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		ln, up, closed := l.ln, l.up, l.closed
		l.mu.Unlock()
		if closed {
			return nil, net.ErrClosed
		}
		if ln == nil {
			<-up
			continue
		}
		c, err := ln.Accept()
		if err != nil {
			l.mu.Lock()
			restarted := !l.closed && l.ln != ln
			l.mu.Unlock()
			if restarted {
				continue
			}
			return nil, err
		}
		l.mu.Lock()
		if l.ln != ln {
			// Accepted just as the listener went down: refuse it.
			l.mu.Unlock()
			c.Close()
			continue
		}
		tc := &trackedConn{Conn: c, l: l}
		l.conns[tc] = struct{}{}
		l.mu.Unlock()
		return tc, nil
	}
}

func (l *restartable) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var err error
	if l.ln != nil {
		err = l.ln.Close()
	} else {
		close(l.up)
	}
	return err
}

// Addr is the address the listener keeps across restarts.
func (l *restartable) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		return l.ln.Addr()
	}
	return stringAddr{l.network, l.addr}
}

type stringAddr struct{ network, addr string }

func (a stringAddr) Network() string { return a.network }
func (a stringAddr) String() string  { return a.addr }

// down closes the listener and every connection it accepted.
func (l *restartable) down() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.ln == nil {
		return
	}
	l.ln.Close()
	l.ln = nil
	l.up = make(chan struct{})
	for c := range l.conns {
		c.(*trackedConn).Conn.Close()
	}
	clear(l.conns)
}

// bringUp listens on the address again.
func (l *restartable) bringUp() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.ln != nil {
		return nil
	}
	var lc net.ListenConfig
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ln, err := lc.Listen(ctx, l.network, l.addr)
	if err != nil {
		return fmt.Errorf("apisixtest: listen again on %s: %w", l.addr, err)
	}
	l.ln = ln
	close(l.up)
	return nil
}

type trackedConn struct {
	net.Conn
	l    *restartable
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// Restart stops serving for down, as a graceful APISIX restart does: every
// listener made by Listen (Start, StartData) closes with its connections,
// so new connections are refused, and the Tick at or after down from now
// listens again on the same addresses. With cold, the workers come back
// without checkers and the shared health state is gone, as after a real
// restart: every checker starts again healthy with zero counters, created
// at once, or with Checks.Lazy only by data-path requests. Otherwise the
// server comes back with the state it had.
func (s *Server) Restart(down time.Duration, cold bool) {
	s.lnMu.Lock()
	ls := append([]*restartable(nil), s.listeners...)
	s.upAt = s.clock.Now().Add(down)
	s.restarting = true
	s.lnMu.Unlock()
	for _, l := range ls {
		l.down()
	}
	if !cold {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probing = s.checks.ProbingWorker
	s.pending = nil
	s.cold = true
	for _, ref := range sortedRefs(s.res) {
		s.dropAll(ref, s.res[ref])
	}
	for _, w := range s.workers {
		clear(w.checkers)
		clear(w.waiting)
	}
}

// comeBack is the workers' start after a restart, at now: after a cold
// one, without Checks.Lazy, every worker builds every checker again. It
// runs under s.mu.
func (s *Server) comeBack(now time.Time) {
	if !s.cold {
		return
	}
	s.cold = false
	if s.checks.Lazy {
		return
	}
	for _, ref := range sortedRefs(s.res) {
		if r := s.res[ref]; r.checker {
			for i := range s.workers {
				s.create(i, ref, r, now)
			}
		}
	}
}

// Restarting reports whether a Restart is under way: the listeners are
// down until the Tick at or after its end.
func (s *Server) Restarting() bool {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	return s.restarting
}

// RestartErr is the last error of listening again after a Restart (the
// port was taken meanwhile); Tick retries until it works.
func (s *Server) RestartErr() error {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	return s.restartErr
}

// tickListeners brings the listeners back when a restart is over, and
// reports whether the server is serving (false while down). A listener
// that cannot listen again (its port was taken) is retried at the next
// Tick.
func (s *Server) tickListeners(now time.Time) (serving bool) {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if !s.restarting {
		return true
	}
	if now.Before(s.upAt) {
		return false
	}
	s.restartErr = nil
	for _, l := range s.listeners {
		if err := l.bringUp(); err != nil {
			s.restartErr = err
		}
	}
	s.restarting = s.restartErr != nil
	return !s.restarting
}

// Run calls Tick every TickInterval until ctx ends.
func (s *Server) Run(ctx context.Context) {
	t := time.NewTicker(TickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Tick()
		}
	}
}
