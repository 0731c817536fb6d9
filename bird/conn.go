package bird

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// Default bounds of a Dialer whose fields are zero.
const (
	// DefaultMaxReplyBytes bounds one reply. A route listing of a full
	// Internet table is larger, but rhi asks for one prefix at a time.
	DefaultMaxReplyBytes = 16 << 20
	// DefaultMaxLineBytes bounds one line. BIRD 2 cuts its own lines at
	// 512 bytes; the margin allows for other versions.
	DefaultMaxLineBytes = 64 << 10
)

// Dialer connects to BIRD's control socket with the given bounds. The zero
// value is ready to use and applies the defaults.
type Dialer struct {
	MaxReplyBytes int // bound on one reply; 0: DefaultMaxReplyBytes
	MaxLineBytes  int // bound on one line; 0: DefaultMaxLineBytes
	MaxReplyLines int // bound on the lines of one reply; 0: DefaultMaxReplyLines
}

// Dial connects to the control socket at path with a zero Dialer.
func Dial(ctx context.Context, path string) (*Conn, error) {
	var d Dialer
	return d.Dial(ctx, path)
}

// Dial connects to the control socket at path, reads the greeting and
// restricts the connection to read-only commands. ctx bounds the whole
// handshake.
func (d Dialer) Dial(ctx context.Context, path string) (*Conn, error) {
	maxReply, maxLine := d.MaxReplyBytes, d.MaxLineBytes
	if maxReply <= 0 {
		maxReply = DefaultMaxReplyBytes
	}
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("bird: dial %q: %w", path, withoutAddr(err))
	}
	fr := newFrameReader(nc, maxLine, maxReply)
	if d.MaxReplyLines > 0 {
		fr.maxLines = d.MaxReplyLines
	}
	c := &Conn{nc: nc, fr: fr}
	if err := c.handshake(ctx); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("bird: %q: %w", path, err)
	}
	return c, nil
}

// Conn is a connection to BIRD's control socket. It is not safe for
// concurrent use: the protocol is one command, then its whole reply.
//
// After an I/O error, a timeout or a malformed reply the Conn is unusable
// (every later Exec fails), because the rest of an unread reply would
// otherwise be taken for the answer to the next command. Close it and dial
// again.
type Conn struct {
	nc   net.Conn
	fr   *frameReader
	err  error // first error that left the stream out of step
	wbuf []byte
}

// Close closes the connection. Exec fails after Close.
func (c *Conn) Close() error {
	if c.err == nil {
		c.err = net.ErrClosed
	}
	return c.nc.Close()
}

// Exec sends one command and reads its whole reply. The deadline and
// cancellation of ctx apply to the write and to every read.
//
// A reply that ends with an error code (8xxx, 9xxx) returns the reply, its
// lines included, and an *Error; the Conn stays usable. A malformed reply
// (ErrFraming), one over the bounds (ErrTooLarge), a connection closed in the
// middle (io.ErrUnexpectedEOF) or a timeout (context.DeadlineExceeded)
// returns an error and leaves the Conn unusable.
//
// Errors do not repeat cmd (an *Error cannot, it is BIRD's own message):
// callers that report them name the command.
func (c *Conn) Exec(ctx context.Context, cmd string) (Reply, error) {
	if cmd == "" || strings.ContainsAny(cmd, "\r\n") {
		return Reply{}, fmt.Errorf("bird: command %q: must be one non-empty line", cmd)
	}
	r, err := c.roundTrip(ctx, cmd, true)
	if err != nil {
		return r, fmt.Errorf("bird: %w", err)
	}
	if err := replyError(r); err != nil {
		return r, err
	}
	return r, nil
}

// handshake reads the greeting and sends "restrict", so that a bug in rhi
// can never change BIRD's state through this connection.
func (c *Conn) handshake(ctx context.Context) error {
	r, err := c.roundTrip(ctx, "", false)
	if err != nil {
		return fmt.Errorf("greeting: %w", err)
	}
	if r.Code != CodeWelcome {
		return fmt.Errorf("greeting: want code %04d, got %s", CodeWelcome, describe(r))
	}
	r, err = c.roundTrip(ctx, "restrict", true)
	if err != nil {
		return fmt.Errorf("restrict: %w", err)
	}
	if err := replyError(r); err != nil {
		return fmt.Errorf("restrict refused: %w", err)
	}
	if r.Code != CodeRestricted {
		return fmt.Errorf("restrict refused: want code %04d, got %s", CodeRestricted, describe(r))
	}
	return nil
}

// describe shows a reply's end line for an error message.
func describe(r Reply) string {
	if n := len(r.Lines); n > 0 {
		return fmt.Sprintf("%04d %q", r.Code, r.Lines[n-1].Text)
	}
	return fmt.Sprintf("%04d", r.Code)
}

// roundTrip writes cmd (when send is set) and reads one reply, under ctx.
// Any error it returns has made the Conn unusable.
func (c *Conn) roundTrip(ctx context.Context, cmd string, send bool) (Reply, error) {
	if c.err != nil {
		return Reply{}, fmt.Errorf("connection unusable after an earlier error: %w", c.err)
	}
	if err := ctx.Err(); err != nil {
		return Reply{}, err // nothing sent yet: the stream is still in step
	}
	deadline, _ := ctx.Deadline() // zero: no deadline, cancellation only
	if err := c.nc.SetDeadline(deadline); err != nil {
		c.err = err
		return Reply{}, err
	}
	// Cancellation has no deadline of its own: wake the blocked I/O by
	// moving the deadline into the past. Wait for that to finish before
	// returning, so it cannot land on the next exchange's deadline.
	woken := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.nc.SetDeadline(time.Unix(1, 0)) // in the past: wakes a blocked read or write
		close(woken)
	})
	defer func() {
		if !stop() {
			<-woken
		}
	}()

	if send {
		c.wbuf = append(append(c.wbuf[:0], cmd...), '\n')
		if _, err := c.nc.Write(c.wbuf); err != nil {
			c.err = ioError(ctx, "write command", err)
			return Reply{}, c.err
		}
	}
	r, err := c.fr.readReply()
	if err != nil {
		c.err = ioError(ctx, "read reply", err)
		return r, c.err
	}
	return r, nil
}

// ioError says what went wrong in terms a caller can test with errors.Is:
// a deadline hit becomes context.DeadlineExceeded (or the context's own
// error) and a clean close becomes io.ErrUnexpectedEOF, since a reply was
// due.
func ioError(ctx context.Context, op string, err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		cerr := ctx.Err()
		if cerr == nil {
			// The socket deadline is the context's deadline; the
			// context's own timer may fire a moment later.
			cerr = context.DeadlineExceeded
		}
		// The net error repeats the socket path the caller already has.
		return fmt.Errorf("%s: %w (%w)", op, cerr, os.ErrDeadlineExceeded)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%s: connection closed by bird: %w", op, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("%s: %w", op, withoutAddr(err))
}

// withoutAddr drops the *net.OpError around err, whose text repeats the
// socket path ("dial unix /run/bird/bird.ctl: connect: …"), which the
// caller's own message names once. The cause stays, for errors.Is.
func withoutAddr(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}
