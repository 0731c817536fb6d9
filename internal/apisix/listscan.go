package apisix

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// The list is read by listReader, a tokenizer for its one shape, rather
// than by a json.Decoder: the decoder scans each entry twice with its
// general state machine (once to find its end, once more to hand it to
// UnmarshalJSON), which was about half of a poll's CPU at 10,000 upstreams
// (BENCHMARKS.md). listReader checks each entry once, with the
// same rules as encoding/json's scanner, then the walker reads it in place
// as before. FuzzListReaderAgainstDecoder holds it to the json.Decoder it
// replaced on arbitrary bodies: the same resources, or the same kind of
// error.

// listReader reads a list from a meter into buf, keeping unread bytes
// from pos (the start of the entry being read) to end. It grows buf only
// when one entry does not fit, so its memory is about one entry's.
type listReader struct {
	m        *meter
	buf      []byte
	pos, end int
	off      int64 // offset in the body of buf[0]
	err      error // the reader's error, reported when more is needed
	stack    []byte
}

// listBufSize is the read buffer of a list: room for ~90 two-node entries.
const listBufSize = 32 << 10

// maxNesting is encoding/json's bound on the nesting of one value.
const maxNesting = 10000

// errIncomplete reports a value that runs past what buf holds.
var errIncomplete = errors.New("incomplete value")

// offset is the position in the body of the next unread byte.
func (r *listReader) offset() int64 { return r.off + int64(r.pos) }

// fill reads more after end, keeping buf[pos:end], and reports whether
// it got any; when not, r.err says why (io.EOF at the end of the body).
func (r *listReader) fill() bool {
	if r.err != nil {
		return false
	}
	if r.pos > 0 {
		n := copy(r.buf, r.buf[r.pos:r.end])
		r.off += int64(r.pos)
		r.pos, r.end = 0, n
	}
	if r.end == len(r.buf) {
		r.buf = append(r.buf, make([]byte, max(len(r.buf), listBufSize))...)
		r.buf = r.buf[:cap(r.buf)]
	}
	start := r.end
	for empty := 0; r.end < len(r.buf) && r.err == nil; {
		k, err := r.m.Read(r.buf[r.end:])
		r.end += k
		switch {
		case err != nil:
			r.err = err
		case k > 0:
			empty = 0
		default:
			if empty++; empty == 100 {
				r.err = io.ErrNoProgress
			}
		}
	}
	return r.end > start
}

// peek skips JSON whitespace and returns the next byte; at the end of the
// body it returns the reader's error (io.EOF).
func (r *listReader) peek() (byte, error) {
	for {
		for ; r.pos < r.end; r.pos++ {
			if c := r.buf[r.pos]; !isSpace(c) {
				return c, nil
			}
		}
		if !r.fill() {
			return 0, r.err
		}
	}
}

// literal consumes the literal word (true, false, null) at pos.
func (r *listReader) literal(word string) error {
	for {
		end, err := scanLiteral(r.buf[:r.end], r.pos, word)
		if err != errIncomplete {
			r.pos = end
			return err
		}
		if err := r.more(); err != nil {
			return err
		}
	}
}

// value consumes one JSON value at pos, after whitespace, and returns its
// bytes, valid until the next call.
func (r *listReader) value() ([]byte, error) {
	if _, err := r.peek(); err != nil {
		return nil, noEOF(err)
	}
	for {
		end, err := r.scan(r.buf[:r.end], r.pos)
		if err != errIncomplete {
			if err != nil {
				return nil, err
			}
			if c := r.buf[r.pos]; end == r.end && c != '{' && c != '[' {
				// encoding/json ends a scalar at the byte after it, so
				// it reads one more: do the same, to fail the same way
				// at a limit.
				n := end - r.pos
				if !r.fill() && r.err != io.EOF {
					return nil, r.err
				}
				end = r.pos + n
			}
			b := r.buf[r.pos:end]
			r.pos = end
			return b, nil
		}
		if err := r.more(); err != nil {
			return nil, err
		}
	}
}

// more reads past end for a value that runs past it; the end of the body
// there is an error.
func (r *listReader) more() error {
	if !r.fill() {
		return noEOF(r.err)
	}
	return nil
}

// scan checks the JSON value that starts at b[i] (not whitespace) as
// encoding/json's scanner does and returns where it ends: errIncomplete
// if b ends first, or an error at the first byte no valid value can hold.
// It is long because it is one state machine: a value, then what may follow it
// in the containers open around it (r.stack).
func (r *listReader) scan(b []byte, i int) (int, error) {
	r.stack = r.stack[:0] // '{' or '[' per open container
	var err error
value:
	if i, err = skipSpace(b, i); err != nil {
		return i, err
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if len(r.stack) == maxNesting {
			return i, errors.New("exceeded max depth")
		}
		r.stack = append(r.stack, c)
		if i, err = skipSpace(b, i+1); err != nil {
			return i, err
		}
		switch {
		case b[i] == c+2: // '}' or ']'
			r.stack = r.stack[:len(r.stack)-1]
			i++
			goto end
		case c == '{':
			goto key
		}
		goto value
	case c == '"':
		i, err = scanString(b, i)
	case isDigit(c) && i+1 < len(b) && (b[i+1] == ',' || b[i+1] == '}' || b[i+1] == ']'):
		i++ // a one-digit number, as scanNumber would read it, without the call
	case c == '-' || c >= '0' && c <= '9':
		i, err = scanNumber(b, i)
	case c == 't':
		i, err = scanLiteral(b, i, "true")
	case c == 'f':
		i, err = scanLiteral(b, i, "false")
	case c == 'n':
		i, err = scanLiteral(b, i, "null")
	default:
		return i, syntaxError(c, "looking for beginning of value")
	}
	if err != nil {
		return i, err
	}
end:
	if len(r.stack) == 0 {
		return i, nil
	}
	if i, err = skipSpace(b, i); err != nil {
		return i, err
	}
	switch top := r.stack[len(r.stack)-1]; b[i] {
	case ',':
		i++
		if top == '[' {
			goto value
		}
		if i, err = skipSpace(b, i); err != nil {
			return i, err
		}
		goto key
	case top + 2:
		r.stack = r.stack[:len(r.stack)-1]
		i++
		goto end
	default:
		return i, syntaxError(b[i], "after a value in an object or array")
	}
key:
	if b[i] != '"' {
		return i, syntaxError(b[i], "looking for beginning of object key string")
	}
	if i, err = scanString(b, i); err != nil {
		return i, err
	}
	if i, err = skipSpace(b, i); err != nil {
		return i, err
	}
	if b[i] != ':' {
		return i, syntaxError(b[i], "after object key")
	}
	i++
	goto value
}

func syntaxError(c byte, context string) error {
	return fmt.Errorf("invalid character %q %s", c, context)
}

// skipSpace returns the index of the first byte from i that is not JSON
// whitespace, errIncomplete if there is none.
func skipSpace(b []byte, i int) (int, error) {
	for ; i < len(b); i++ {
		if c := b[i]; c > ' ' || !isSpace(c) {
			return i, nil
		}
	}
	return i, errIncomplete
}

// plain marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString checks the string at b[i] ('"') and returns the index after
// its closing quote. Like encoding/json it accepts any byte from 0x20 up,
// valid UTF-8 or not.
func scanString(b []byte, i int) (int, error) {
	// skipPlain by hand, for the common case: no call for a string
	// without escapes.
	for i++; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := lowBytes(x) | zeroBytes(x^'"'*lsb) | zeroBytes(x^'\\'*lsb); m != 0 {
			if i += bits.TrailingZeros64(m) >> 3; b[i] == '"' {
				return i + 1, nil
			}
			return scanStringRest(b, i)
		}
	}
	return scanStringRest(b, i)
}

// scanStringRest is scanString from b[i], inside the string.
func scanStringRest(b []byte, i int) (int, error) {
	for {
		if i = skipPlain(b, i); i == len(b) {
			return i, errIncomplete
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c != '\\':
			return i, syntaxError(c, "in string literal")
		case i+1 == len(b):
			return i, errIncomplete
		}
		var err error
		if i, err = scanEscape(b, i); err != nil {
			return i, err
		}
	}
}

// scanEscape checks the escape at b[i] ('\\', with a byte after it) and
// returns the index after it.
func scanEscape(b []byte, i int) (int, error) {
	switch e := b[i+1]; e {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
		i += 2
		for k := 0; k < 4; k, i = k+1, i+1 {
			if i == len(b) {
				return i, errIncomplete
			}
			if !isHex(b[i]) {
				return i, syntaxError(b[i], "in \\u hexadecimal character escape")
			}
		}
		return i, nil
	default:
		return i, syntaxError(e, "in string escape code")
	}
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber checks the number at b[i] and returns the index after it. A
// number that reaches the end of b is incomplete: more digits may follow.
func scanNumber(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	if i == len(b) {
		return i, errIncomplete
	}
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i = digits(b, i)
	default:
		return i, syntaxError(c, "in numeric literal")
	}
	if i < len(b) && b[i] == '.' {
		var err error
		if i, err = someDigits(b, i+1, "after decimal point in numeric literal"); err != nil {
			return i, err
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		var err error
		if i, err = someDigits(b, i, "in exponent of numeric literal"); err != nil {
			return i, err
		}
	}
	if i == len(b) {
		return i, errIncomplete
	}
	return i, nil
}

// someDigits reads one digit or more at b[i].
func someDigits(b []byte, i int, context string) (int, error) {
	switch {
	case i == len(b):
		return i, errIncomplete
	case !isDigit(b[i]):
		return i, syntaxError(b[i], context)
	}
	return digits(b, i), nil
}

func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// scanLiteral checks that b at i spells word and returns the index after
// it.
func scanLiteral(b []byte, i int, word string) (int, error) {
	for k := 0; k < len(word); k, i = k+1, i+1 {
		if i == len(b) {
			return i, errIncomplete
		}
		if b[i] != word[k] {
			return i, syntaxError(b[i], "in literal "+word+" (expecting "+fmt.Sprintf("%q", word[k])+")")
		}
	}
	return i, nil
}
