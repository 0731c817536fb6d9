// Package birdtest provides a fake BIRD control socket for tests of code
// that talks to BIRD through package bird: it greets, accepts "restrict",
// and answers each command with the bytes set for it, typically a captured
// transcript.
package birdtest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Unknown is BIRD's answer to a command it cannot parse, sent for any
// command the Server has no reply for.
const Unknown = "9001 syntax error, unexpected CF_SYM_UNDEFINED\n"

// Server listens on a unix socket in a temporary directory. It serves any
// number of connections, each one command at a time, like BIRD. Its methods
// are safe for concurrent use.
type Server struct {
	// Path is the socket to dial.
	Path string

	ln      net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	repl    map[string]string // command → raw reply bytes
	stal    map[string]bool   // commands never answered
	cmds    []string          // commands received, "restrict" included
	more    chan struct{}     // closed and replaced by every command, for WaitCommands
	held    chan struct{}     // closed by the first stalled command, for Stalled
	stalled bool              // held is closed
	open    map[net.Conn]bool
}

// NewServer starts a Server that answers with replies (command → raw reply
// bytes, every line newline-terminated). It is closed when the test ends.
func NewServer(t testing.TB, replies map[string]string) *Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bird.ctl")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Path: path, ln: ln, repl: map[string]string{}, stal: map[string]bool{}, more: make(chan struct{}), held: make(chan struct{}), open: map[net.Conn]bool{}}
	for cmd, r := range replies {
		s.repl[cmd] = r
	}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Close)
	return s
}

// Set makes the Server answer cmd with reply from now on.
func (s *Server) Set(cmd, reply string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repl[cmd] = reply
	delete(s.stal, cmd)
}

// Stall makes the Server read cmd and never answer it, as a BIRD that
// hangs would.
func (s *Server) Stall(cmd string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stal[cmd] = true
}

// Stalled returns a channel that is closed once the Server has read a
// command it stalls on (see Stall). The client waiting for that reply then
// waits forever, so a test can end its context there (see Expire) instead
// of waiting out a real deadline.
func (s *Server) Stalled() <-chan struct{} { return s.held }

// Commands returns the commands received so far, in order.
func (s *Server) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cmds...)
}

// WaitCommands blocks until the Server has received at least n commands
// ("restrict" included; a stalled one counts once read) or ctx ends; then
// it returns ctx's error, with the count so far. The Server reads on its
// own goroutines: a client's Exec can return (at its deadline, say) before
// the command is recorded.
func (s *Server) WaitCommands(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, more := len(s.cmds), s.more
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-more:
		case <-ctx.Done():
			return fmt.Errorf("birdtest: %d commands, want %d: %w", got, n, ctx.Err())
		}
	}
}

// Close stops listening, drops every connection and waits for them to end.
func (s *Server) Close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for c := range s.open {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.open[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.open, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	if _, err := c.Write([]byte("0001 BIRD 2.0.12 ready.\n")); err != nil {
		return
	}
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.TrimSuffix(line, "\n")
		s.mu.Lock()
		s.cmds = append(s.cmds, cmd)
		close(s.more)
		s.more = make(chan struct{})
		reply, ok := s.repl[cmd]
		stall := s.stal[cmd]
		if stall && !s.stalled {
			s.stalled = true
			close(s.held)
		}
		s.mu.Unlock()
		switch {
		case stall:
			_, _ = br.ReadString(0) // until the client hangs up
			return
		case cmd == "restrict":
			reply = "0016 Access restricted\n"
		case !ok:
			reply = Unknown
		}
		if _, err := c.Write([]byte(reply)); err != nil {
			return
		}
	}
}
