package bird

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rhi-daemon/rhi/bird/birdtest"
)

const (
	greeting   = "0001 BIRD 2.0.12 ready.\n"
	restricted = "0016 Access restricted\n"
)

// server is the BIRD side of one connection in a test.
type server struct {
	conn net.Conn
	br   *bufio.Reader

	mu   sync.Mutex
	cmds []string // commands received, in order
}

// readCmd reads one command line; ok is false once the client is gone.
func (s *server) readCmd() (string, bool) {
	line, err := s.br.ReadString('\n')
	if err != nil {
		return "", false
	}
	cmd := strings.TrimSuffix(line, "\n")
	s.mu.Lock()
	s.cmds = append(s.cmds, cmd)
	s.mu.Unlock()
	return cmd, true
}

// write sends raw bytes; errors mean the client left, which scripts ignore.
func (s *server) write(data string) { _, _ = s.conn.Write([]byte(data)) }

// handshake plays BIRD's greeting and the answer to "restrict".
func (s *server) handshake() bool {
	s.write(greeting)
	if cmd, ok := s.readCmd(); !ok || cmd != "restrict" {
		return false
	}
	s.write(restricted)
	return true
}

// received returns the commands the server has read so far.
func (s *server) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cmds...)
}

// fakeBird listens on a unix socket in a temporary directory and runs script
// on the first connection. The test's cleanup waits for the script, so a
// script must return once the client has closed the connection.
func fakeBird(t testing.TB, script func(s *server)) (path string, srv *server) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "bird.ctl")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv = &server{}
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			close(ready)
			return
		}
		srv.conn, srv.br = c, bufio.NewReader(c)
		close(ready)
		defer c.Close()
		script(srv)
		// Hold the connection until the client closes it, so that a client
		// still reading sees a stall, not an EOF, unless the script closed.
		_, _ = srv.br.ReadString(0)
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return path, srv
}

// answer serves the handshake, then answers each command from replies
// (by command text); an unknown command gets a BIRD syntax error.
func answer(replies map[string]string) func(*server) {
	return func(s *server) {
		if !s.handshake() {
			return
		}
		for {
			cmd, ok := s.readCmd()
			if !ok {
				return
			}
			r, ok := replies[cmd]
			if !ok {
				r = "9001 syntax error, unexpected CF_SYM_UNDEFINED\n"
			}
			s.write(r)
		}
	}
}

func dial(t *testing.T, path string) *Conn {
	t.Helper()
	c, err := Dial(testCtx(t), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testCtx bounds a test's I/O well past anything it needs, so that a bug
// fails the test instead of hanging it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestExecAgainstTranscripts(t *testing.T) {
	path, srv := fakeBird(t, answer(map[string]string{
		"show protocols":      readFile(t, "bird2.0.12-show-protocols.up-vip.txt"),
		"show symbols peer_b": readFile(t, "bird2.0.12-show-symbols-peer_b.txt"),
		"disable peer_b":      readFile(t, "bird2.0.12-restrict-disable-denied.txt"),
	}))
	c := dial(t, path)
	ctx := testCtx(t)

	r, err := c.Exec(ctx, "show protocols")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ParseProtocols(r)
	if err != nil || len(ps) != 5 || ps[2].Name != "peer_b" || !ps[2].Established() {
		t.Fatalf("ParseProtocols = %+v, %v", ps, err)
	}

	// An odd end code ends the reply; the next exchange is not disturbed.
	r, err = c.Exec(ctx, "show symbols peer_b")
	if err != nil || r.Code != 1010 || r.Lines[0].Text != "peer_b  \tprotocol" {
		t.Fatalf("show symbols = %+v, %v", r, err)
	}

	// A BIRD error is typed, and leaves the connection usable.
	_, err = c.Exec(ctx, "disable peer_b")
	var be *Error
	if !errors.As(err, &be) || be.Code != CodeAccessDenied {
		t.Fatalf("disable: err = %v, want *Error 8007", err)
	}
	if _, err := c.Exec(ctx, "show protocols"); err != nil {
		t.Fatalf("after a BIRD error: %v", err)
	}
	want := []string{"restrict", "show protocols", "show symbols peer_b", "disable peer_b", "show protocols"}
	if diff := cmp.Diff(want, srv.received()); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}

// A BIRD that stops answering: Exec returns at the context's deadline, and
// the connection is unusable afterwards (the reply may still come).
func TestExecStall(t *testing.T) {
	stalled := make(chan struct{})
	path, _ := fakeBird(t, func(s *server) {
		if s.handshake() {
			if _, ok := s.readCmd(); ok {
				close(stalled) // and never answer
			}
		}
	})
	c := dial(t, path)
	// The deadline comes once BIRD has read the command and stalls (a
	// deadline already past would send nothing and be no stall); testCtx
	// bounds a failing run.
	ctx, cancel := birdtest.Expire(testCtx(t), stalled)
	defer cancel()
	_, err := c.Exec(ctx, "show protocols")
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	_, err = c.Exec(testCtx(t), "show protocols")
	if err == nil || !strings.Contains(err.Error(), "unusable") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Exec after a timeout: err = %v, want the connection unusable", err)
	}
}

// Cancellation without a deadline wakes a blocked read too.
func TestExecCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path, _ := fakeBird(t, func(s *server) {
		if s.handshake() {
			if _, ok := s.readCmd(); ok {
				cancel()
			}
		}
	})
	c := dial(t, path)
	if _, err := c.Exec(ctx, "show protocols"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// A context that is already done sends nothing and leaves the connection
// usable.
func TestExecDoneContext(t *testing.T) {
	path, srv := fakeBird(t, answer(map[string]string{"show status": readFile(t, "bird2.0.12-show-status.txt")}))
	c := dial(t, path)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Exec(done, "show status"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if r, err := c.Exec(testCtx(t), "show status"); err != nil || r.Code != 13 {
		t.Fatalf("next Exec = %v, %v", r.Code, err)
	}
	if diff := cmp.Diff([]string{"restrict", "show status"}, srv.received()); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}

func TestExecSplitWrites(t *testing.T) {
	reply := readFile(t, "bird2.0.12-show-protocols-all-peer_b.up-vip.txt")
	chunks := map[string][]string{
		"byte by byte": strings.Split(reply, ""),
		"mid-line":     {reply[:7], reply[7:70], reply[70:71], reply[71 : len(reply)-3], reply[len(reply)-3:]},
		"end line split": {
			reply[:len(reply)-2], reply[len(reply)-2:],
		},
	}
	for name, parts := range chunks {
		t.Run(name, func(t *testing.T) {
			path, _ := fakeBird(t, func(s *server) {
				if !s.handshake() {
					return
				}
				if _, ok := s.readCmd(); ok {
					for _, p := range parts {
						s.write(p)
					}
				}
			})
			c := dial(t, path)
			r, err := c.Exec(testCtx(t), "show protocols all peer_b")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(frame(t, reply), r); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Replies that arrive ahead of their command are kept for the next Exec.
func TestExecPipelined(t *testing.T) {
	proto := readFile(t, "bird2.0.12-show-protocols.up-vip.txt")
	export := readFile(t, "bird2.0.12-show-route-export-peer_b-vip.up-vip.txt")
	path, _ := fakeBird(t, func(s *server) {
		if !s.handshake() {
			return
		}
		if _, ok := s.readCmd(); ok {
			s.write(proto + export)
		}
		s.readCmd()
	})
	c := dial(t, path)
	ctx := testCtx(t)
	r1, err := c.Exec(ctx, "show protocols")
	if err != nil || len(r1.Lines) != 7 {
		t.Fatalf("first = %d lines, %v", len(r1.Lines), err)
	}
	r2, err := c.Exec(ctx, "show route export peer_b.ipv4 10.255.0.10/32")
	if st, perr := ParseExport(r2, err); st != Exported || perr != nil {
		t.Fatalf("second = %v, %v", st, perr)
	}
}

func TestExecAsync(t *testing.T) {
	path, _ := fakeBird(t, answer(map[string]string{
		"show route 10.255.0.10/32 all": "+Kernel dropped some netlink messages\n" +
			strings.Replace(readFile(t, "bird2.0.12-show-route-vip-all.up-vip.txt"), "1008-", "+0021 async\n1008-", 1),
	}))
	c := dial(t, path)
	r, err := c.Exec(testCtx(t), "show route 10.255.0.10/32 all")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Kernel dropped some netlink messages", "0021 async"}, r.Async); diff != "" {
		t.Errorf("async (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(frame(t, readFile(t, "bird2.0.12-show-route-vip-all.up-vip.txt")).Lines, r.Lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

// Failures that leave the stream out of step: each returns an error that
// says what happened, and the Conn refuses further commands.
func TestExecPoisoned(t *testing.T) {
	tests := []struct {
		name   string
		reply  string // written in answer to the command
		close  bool   // close the connection after writing
		dialer Dialer
		want   error
	}{
		{name: "garbage line", reply: "1007-Table master4:\nHTTP/1.1 400 Bad Request\n", want: ErrFraming},
		{name: "closed mid-reply", reply: "1007-Table master4:\n 10.255.0.10/32  unicast", close: true, want: errUnexpectedEOF},
		{name: "closed before the reply", close: true, want: errUnexpectedEOF},
		{name: "oversized reply", reply: strings.Repeat("1007-"+strings.Repeat("x", 60)+"\n", 100) + "0000 \n",
			dialer: Dialer{MaxReplyBytes: 4096}, want: ErrTooLarge},
		{name: "oversized line", reply: "1007-" + strings.Repeat("x", 300) + "\n0000 \n",
			dialer: Dialer{MaxLineBytes: 256}, want: ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := fakeBird(t, func(s *server) {
				if !s.handshake() {
					return
				}
				if _, ok := s.readCmd(); ok {
					s.write(tc.reply)
					if tc.close {
						s.conn.Close()
					}
				}
			})
			c, err := tc.dialer.Dial(testCtx(t), path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Exec(testCtx(t), "show route")
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if _, err := c.Exec(testCtx(t), "show status"); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "unusable") {
				t.Errorf("second Exec: err = %v, want unusable after %v", err, tc.want)
			}
		})
	}
}

func TestExecBadCommand(t *testing.T) {
	path, srv := fakeBird(t, answer(map[string]string{"show status": readFile(t, "bird2.0.12-show-status.txt")}))
	c := dial(t, path)
	for _, cmd := range []string{"", "show status\nconfigure", "show status\r"} {
		if _, err := c.Exec(testCtx(t), cmd); err == nil {
			t.Errorf("Exec(%q): no error", cmd)
		}
	}
	if _, err := c.Exec(testCtx(t), "show status"); err != nil {
		t.Fatalf("a refused command must not break the connection: %v", err)
	}
	if diff := cmp.Diff([]string{"restrict", "show status"}, srv.received()); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}

func TestExecAfterClose(t *testing.T) {
	path, _ := fakeBird(t, answer(nil))
	c := dial(t, path)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(testCtx(t), "show status"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("err = %v, want net.ErrClosed", err)
	}
}

func TestDialFailures(t *testing.T) {
	tests := []struct {
		name   string
		script func(*server)
		want   string
		wantIs error
	}{
		{name: "no greeting, closed", script: func(s *server) { s.conn.Close() }, want: "greeting", wantIs: errUnexpectedEOF},
		{name: "wrong greeting code", script: func(s *server) { s.write("0000 hello\n") }, want: `greeting: want code 0001, got 0000 "hello"`},
		{name: "greeting garbage", script: func(s *server) { s.write("SSH-2.0-OpenSSH_9.2\r\n") }, wantIs: ErrFraming},
		{name: "greeting error", script: func(s *server) { s.write("9000 Command too long\n") }, want: "greeting: want code 0001, got 9000"},
		{name: "restrict denied", script: func(s *server) {
			s.write(greeting)
			if _, ok := s.readCmd(); ok {
				s.write("8007 Access denied\n")
			}
		}, want: "restrict refused: bird error 8007: Access denied", wantIs: &Error{}},
		{name: "restrict unexpected code", script: func(s *server) {
			s.write(greeting)
			if _, ok := s.readCmd(); ok {
				s.write("0000 \n")
			}
		}, want: "restrict refused: want code 0016, got 0000"},
		{name: "restrict closed", script: func(s *server) {
			s.write(greeting)
			if _, ok := s.readCmd(); ok {
				s.conn.Close()
			}
		}, want: "restrict", wantIs: errUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := fakeBird(t, tc.script)
			c, err := Dial(testCtx(t), path)
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
			if n := strings.Count(err.Error(), path); n != 1 {
				t.Errorf("err = %v: names the socket %d times, want once", err, n)
			}
			var be *Error
			switch {
			case tc.wantIs == nil:
			case errors.As(tc.wantIs, &be):
				if !errors.As(err, &be) {
					t.Errorf("err = %v, want an *Error", err)
				}
			case !errors.Is(err, tc.wantIs):
				t.Errorf("err = %v, want %v", err, tc.wantIs)
			}
		})
	}
}

// A greeting that never comes: Dial returns at the context's deadline.
func TestDialStall(t *testing.T) {
	accepted := make(chan struct{})
	path, _ := fakeBird(t, func(s *server) { close(accepted) }) // and never greet
	// The deadline comes once BIRD has the connection and stalls; testCtx
	// bounds a failing run.
	ctx, cancel := birdtest.Expire(testCtx(t), accepted)
	defer cancel()
	if _, err := Dial(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

func TestDialMissingSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nosuch.ctl")
	_, err := Dial(testCtx(t), path)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `"`+path+`"`) {
		t.Fatalf("err = %v, want a quoted not-exist error", err)
	}
	if n := strings.Count(err.Error(), path); n != 1 {
		t.Errorf("err = %v: names the socket %d times, want once", err, n)
	}
}
