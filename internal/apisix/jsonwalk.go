package apisix

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
)

// The control API's bodies are walked by hand rather than decoded with
// json.Unmarshal into structs, for two reasons. Unmarshal matches keys
// without regard to case and lets a repeated key win silently, so
// {"status":"unhealthy","STATUS":"healthy"} would read as healthy; APISIX
// (cjson, dkjson) encodes Lua tables, whose keys are unique and spelled as
// in its source. And the list can hold a million entries of which a poll
// needs a few: walking each entry in place keeps only those, where
// Unmarshal would keep the whole body and a copy of every entry.
//
// The rules, for every object read here: a key matches only in its exact
// spelling, and a key that differs from a known one only in case (or by
// Unicode folding, "ſtatus") makes the body unreadable (Failed) rather than
// being skipped: skipping "NODES" would turn a list of unhealthy nodes into
// "no checker", which counts as healthy by default. Other unknown keys are
// skipped, as APISIX adds fields over time. A known key appearing twice
// also makes the body unreadable, since it has no single meaning.

// walker reads a JSON value that has already been checked (json.Valid,
// or listReader, which checks as encoding/json does), so it only tracks
// structure. It still checks every index: on input that was not checked
// it stops with errWalk, never panics.
type walker struct {
	b []byte
	i int
}

var errWalk = errors.New("malformed JSON")

// errDuplicate reports a known key read twice in one object.
type errDuplicate string

func (e errDuplicate) Error() string { return fmt.Sprintf("key %q appears twice", string(e)) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isPunct(c byte) bool { return c == ',' || c == ':' || c == ']' || c == '}' }

// peek skips whitespace and returns the next byte, 0 at the end.
func (w *walker) peek() byte {
	b, i := w.b, w.i
	for i < len(b) && b[i] <= ' ' && isSpace(b[i]) {
		i++
	}
	w.i = i
	if i < len(b) {
		return b[i]
	}
	return 0
}

// str reads the string that starts at w.i and returns it with its quotes,
// and whether it holds an escape.
func (w *walker) str() (quoted []byte, esc bool, err error) {
	b, start := w.b, w.i
	// skipToQuote by hand, for the common case: no call for a string
	// without escapes.
	for i := start + 1; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := zeroBytes(x^'"'*lsb) | zeroBytes(x^'\\'*lsb); m != 0 {
			if i += bits.TrailingZeros64(m) >> 3; b[i] == '"' {
				w.i = i + 1
				return b[start:w.i], false, nil
			}
			break
		}
	}
	return w.strRest()
}

// strRest is str for a string with an escape, or unterminated.
func (w *walker) strRest() (quoted []byte, esc bool, err error) {
	b, start := w.b, w.i
	for i := start + 1; i < len(b); i++ {
		if i = skipToQuote(b, i); i == len(b) {
			break
		}
		switch b[i] {
		case '\\':
			esc = true
			i++
		case '"':
			w.i = i + 1
			return b[start:w.i], esc, nil
		}
	}
	w.i = len(b)
	return nil, false, errWalk
}

// unquote returns a string's text.
func unquote(quoted []byte, esc bool) (string, error) {
	if !esc {
		return string(quoted[1 : len(quoted)-1]), nil
	}
	var s string
	err := json.Unmarshal(quoted, &s)
	return s, err
}

// skip consumes one value of any kind.
func (w *walker) skip() error {
	if c := w.peek(); c == '{' || c == '[' {
		return w.skipContainer()
	}
	depth := 0
	for {
		switch c := w.peek(); {
		case c == 0:
			return errWalk
		case c == '"':
			if _, _, err := w.str(); err != nil {
				return err
			}
		case c == '{' || c == '[':
			depth++
			w.i++
			continue
		case c == '}' || c == ']':
			depth--
			w.i++
			if depth < 0 {
				return errWalk
			}
		case c == ',' || c == ':':
			if depth == 0 {
				return errWalk
			}
			w.i++
			continue
		default: // a number, true, false or null
			b, i := w.b, w.i
			for i < len(b) && !isSpace(b[i]) && !isPunct(b[i]) {
				i++
			}
			w.i = i
		}
		if depth == 0 {
			return nil
		}
	}
}

// skipContainer consumes the object or array at w.i by matching its
// brackets, passing over strings, rather than reading it token by token:
// the walker's input has been checked, so the brackets are its structure.
// (A "counter" object per node made skip a tenth of the list's reading.)
func (w *walker) skipContainer() error {
	b, depth := w.b, 0
	for i := w.i; i < len(b); i++ {
		switch b[i] {
		case '"':
			w.i = i
			if _, _, err := w.str(); err != nil {
				return err
			}
			i = w.i - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				w.i = i + 1
				return nil
			}
		}
	}
	w.i = len(b)
	return errWalk
}

// raw consumes one value and returns its text.
func (w *walker) raw() ([]byte, error) {
	w.peek()
	start := w.i
	err := w.skip()
	return w.b[start:w.i], err
}

// stringValue reads a value that must be a string; ok is false for any
// other kind, which is consumed.
func (w *walker) stringValue() (s string, ok bool, err error) {
	if w.peek() != '"' {
		return "", false, w.skip()
	}
	q, esc, err := w.str()
	if err != nil {
		return "", false, err
	}
	s, err = unquote(q, esc)
	return s, err == nil, err
}

// object reads an object that starts at w.i. For each member it calls
// visit with the index of its key in known (-1 for an unknown key, whose
// value visit need not consume: object skips it). A key that equals a
// known one only when case is ignored, or a known key seen twice, is an
// error.
func (w *walker) object(known []string, visit func(k int) error) error {
	if w.peek() != '{' {
		return errWalk
	}
	w.i++
	var seen uint64
	for {
		switch w.peek() {
		case '}':
			w.i++
			return nil
		case ',':
			w.i++
			continue
		case '"':
		default:
			return errWalk
		}
		k, err := w.key(known)
		if err != nil {
			return err
		}
		if k >= 0 {
			if seen&(1<<k) != 0 {
				return errDuplicate(known[k])
			}
			seen |= 1 << k
		}
		if w.peek() != ':' {
			return errWalk
		}
		w.i++
		if k < 0 {
			err = w.skip()
		} else {
			err = visit(k)
		}
		if err != nil {
			return err
		}
	}
}

// key reads an object key and returns its index in known, or -1.
func (w *walker) key(known []string) (int, error) {
	q, esc, err := w.str()
	if err != nil {
		return -1, err
	}
	k := q[1 : len(q)-1]
	if esc {
		s, err := unquote(q, esc)
		if err != nil {
			return -1, err
		}
		k = []byte(s)
	}
	for i, name := range known {
		if string(k) == name {
			return i, nil
		}
	}
	ascii := isASCII(k)
	for _, name := range known {
		// A known name is ASCII, and ASCII folds only to ASCII: an
		// ASCII key of another length cannot fold to it, nor can a
		// shorter key of any kind (a rune is at least one byte).
		if len(k) < len(name) || len(k) != len(name) && ascii {
			continue
		}
		if bytes.EqualFold(k, []byte(name)) {
			return -1, fmt.Errorf("key %q is not %q: keys are case-sensitive", k, name)
		}
	}
	return -1, nil
}

// isASCII reports whether every byte of b is below 0x80.
func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// nodeList walks a node list (the raw value of "nodes" or "healthy_nodes")
// and calls node for each element, w at its start. obj is false for null,
// which node must read as an object without keys; any other element that
// is not an object is an error. A missing field (nil), null and {} are an
// empty list (APISIX encodes an empty Lua table as {}); any other
// non-array is a shape error naming field.
func nodeList(raw []byte, field string, node func(w *walker, obj bool) error) error {
	return nodeListAt(&walker{b: raw}, field, node)
}

// nodeListAt is nodeList on the value at w. When it returns nil, w is just
// past that value.
func nodeListAt(w *walker, field string, node func(w *walker, obj bool) error) error {
	switch c := w.peek(); {
	case c == 0:
		return nil
	case c == 'n':
		return w.skip()
	case c == '{':
		w.i++
		if w.peek() != '}' {
			return fmt.Errorf("decode: %q is a non-empty object, not a list", field)
		}
		return nil
	case c != '[':
		return fmt.Errorf("decode: %q is %s, not a list", field, kindOf(w.b[w.i:]))
	}
	w.i++
	for i := 0; ; i++ {
		switch c := w.peek(); c {
		case ']':
			w.i++
			return nil
		case ',':
			w.i++
			c = w.peek()
			fallthrough
		default:
			if c != '{' && c != 'n' {
				return fmt.Errorf("decode: %q[%d] is %s, not an object", field, i, kindOf(w.b[w.i:]))
			}
			var err error
			if c == 'n' {
				err = w.skip()
				if err == nil {
					err = node(w, false)
				}
			} else {
				err = node(w, true)
			}
			if err != nil {
				return fmt.Errorf("decode: %q[%d]: %w", field, i, err)
			}
		}
	}
}
