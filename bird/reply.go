package bird

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Reply codes that callers branch on. BIRD documents the full list in its
// doc/reply_codes file.
const (
	CodeOK              = 0    // command done, nothing more to say
	CodeWelcome         = 1    // the greeting on connect
	CodeRestricted      = 16   // answer to "restrict"
	CodeNetworkNotFound = 8001 // "show route <net>" for a net that is not in the table
	CodeAccessDenied    = 8007 // command not allowed on a restricted connection
)

// ErrFraming marks a reply that breaks the line protocol (a line with no
// valid prefix, a continuation line with no code before it). The stream may
// be out of step after it, so the Conn that returned it is unusable.
var ErrFraming = errors.New("malformed reply")

// ErrTooLarge marks a reply or a line longer than the configured bounds.
var ErrTooLarge = errors.New("reply too large")

// Line is one line of a reply.
type Line struct {
	// Code is the line's reply code; a continuation line (one that starts
	// with a space) carries the code of the line before it.
	Code int
	// Text is the line without its prefix ("NNNN-", "NNNN " or " ") and
	// without the newline.
	Text string
}

// Reply is BIRD's whole answer to one command.
type Reply struct {
	// Lines holds the reply's lines in order, the end line included.
	Lines []Line
	// Code is the code of the end line, the first line of the form "NNNN ".
	Code int
	// Async holds the asynchronous messages (lines starting with '+', here
	// without the '+') that arrived while the reply was read. They are not
	// part of the reply.
	Async []string
}

// IsErrorCode reports whether code is one of BIRD's error codes: 8xxx for a
// run-time error, 9xxx for a parse error.
func IsErrorCode(code int) bool { return code >= 8000 && code <= 9999 }

// Error is a reply that ended with an error code.
type Error struct {
	Code int    // 8000–9999
	Text string // BIRD's message, e.g. "Network not found"
}

func (e *Error) Error() string { return fmt.Sprintf("bird error %04d: %s", e.Code, e.Text) }

// replyError returns the reply's end line as an *Error when its code is an
// error code, nil otherwise.
func replyError(r Reply) error {
	if !IsErrorCode(r.Code) {
		return nil
	}
	e := &Error{Code: r.Code}
	if n := len(r.Lines); n > 0 {
		e.Text = r.Lines[n-1].Text
	}
	return e
}

// DefaultMaxReplyLines bounds the lines of one reply, async lines
// included. "show protocols all" takes 30-50 lines per protocol, so this is
// room for thousands of BGP sessions; with the per-line cost below, the
// byte bound is usually reached first.
const DefaultMaxReplyLines = 200_000

// lineCost is what one line costs in memory beyond its text, counted
// against the reply's byte bound: its 24-byte Line in Reply.Lines (a
// 16-byte string in Async), up to 1.25-2 times that again while append
// grows the slice, and the string's rounding to its size class. Without
// it 16 MiB of 2-byte lines cost 1.2 GB.
const lineCost = 64

// frameReader splits BIRD's byte stream into replies. It reads whole lines
// through a buffered reader, so a line split across reads, or several
// replies in one read, frame the same as one line per read.
type frameReader struct {
	br       *bufio.Reader // its size bounds the line length
	maxReply int           // bound on the memory of one reply: its bytes and lineCost per line, async lines included
	maxLines int           // bound on the lines of one reply, async lines included
}

func newFrameReader(r io.Reader, maxLine, maxReply int) *frameReader {
	// +1 for the newline, which ReadSlice keeps in the buffer.
	return &frameReader{br: bufio.NewReaderSize(r, maxLine+1), maxReply: maxReply, maxLines: DefaultMaxReplyLines}
}

// readReply reads up to and including the next end line. It returns io.EOF
// when the stream ends cleanly before a reply starts and io.ErrUnexpectedEOF
// when it ends inside one; the lines read so far are returned with any error.
func (f *frameReader) readReply() (Reply, error) {
	var r Reply
	size, lines := 0, 0
	prev := -1 // code of the previous line of this reply; -1: none yet
	for {
		raw, err := f.br.ReadSlice('\n')
		size += len(raw) + lineCost
		lines++
		switch {
		case size > f.maxReply:
			return r, fmt.Errorf("%w: more than %d bytes, counting %d per line", ErrTooLarge, f.maxReply, lineCost)
		case lines > f.maxLines:
			return r, fmt.Errorf("%w: more than %d lines", ErrTooLarge, f.maxLines)
		}
		if err != nil {
			switch {
			case errors.Is(err, bufio.ErrBufferFull):
				return r, fmt.Errorf("%w: line longer than %d bytes", ErrTooLarge, f.br.Size()-1)
			case errors.Is(err, io.EOF) && lines == 1 && len(raw) == 0:
				return r, io.EOF
			case errors.Is(err, io.EOF):
				return r, fmt.Errorf("connection closed inside a reply: %w", io.ErrUnexpectedEOF)
			}
			return r, err
		}
		line := raw[:len(raw)-1]
		switch {
		case isCodeLine(line):
			code := int(line[0]-'0')*1000 + int(line[1]-'0')*100 + int(line[2]-'0')*10 + int(line[3]-'0')
			r.Lines = append(r.Lines, Line{Code: code, Text: string(line[5:])})
			if line[4] == ' ' {
				r.Code = code
				return r, nil
			}
			prev = code
		case len(line) > 0 && line[0] == ' ':
			if prev < 0 {
				return r, fmt.Errorf("%w: continuation line %s with no code before it", ErrFraming, quoteLine(line))
			}
			r.Lines = append(r.Lines, Line{Code: prev, Text: string(line[1:])})
		case len(line) > 0 && line[0] == '+':
			r.Async = append(r.Async, string(line[1:]))
		default:
			return r, fmt.Errorf("%w: line %s has no reply code", ErrFraming, quoteLine(line))
		}
	}
}

// isCodeLine reports whether line starts with "NNNN-" or "NNNN ".
func isCodeLine(line []byte) bool {
	if len(line) < 5 || (line[4] != '-' && line[4] != ' ') {
		return false
	}
	for _, b := range line[:4] {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// quoteLine quotes a line for an error message, cut short so that a huge
// garbage line does not make a huge error.
func quoteLine(line []byte) string {
	const max = 64
	if len(line) > max {
		return fmt.Sprintf("%q…", line[:max])
	}
	return fmt.Sprintf("%q", line)
}
