package bird

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// tinyLines is a reply of n empty continuation lines (" \n", 2 bytes each).
func tinyLines(n int) string { return "1007-x\n" + strings.Repeat(" \n", n) + "0000 \n" }

// tinyLinesReader reads what tinyLines(n) holds, made as it is read: the
// reader stops long before the end of a large n, which need not be built.
func tinyLinesReader(n int) io.Reader {
	return io.MultiReader(strings.NewReader("1007-x\n"), io.LimitReader(&emptyLines{}, 2*int64(n)), strings.NewReader("0000 \n"))
}

// emptyLines reads " \n" without end.
type emptyLines struct{ odd bool } // odd: the next byte is a line's '\n'

func (e *emptyLines) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = " \n"[btoi(e.odd)]
		e.odd = !e.odd
	}
	return len(p), nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A reply is bounded by its lines as well as its bytes,
// each line counting lineCost bytes of memory besides its text; both
// bounds are exact.
func TestFrameLineBounds(t *testing.T) {
	tests := []struct {
		name     string
		stream   string
		maxRep   int
		maxLines int
		ok       bool
	}{
		// 1 + 600 + 1 lines of 7 + 1,200 + 6 bytes.
		{"tiny lines within bytes and lines", tinyLines(600), 602*lineCost + 1213, 602, true},
		{"tiny lines over the bytes by their cost", tinyLines(600), 602*lineCost + 1212, 1000, false},
		{"tiny lines over the lines", tinyLines(600), 1 << 20, 601, false},
		{"async lines count as lines", "+a\n+b\n+c\n0000 \n", 1 << 20, 3, false},
		{"async lines at the cap", "+a\n+b\n+c\n0000 \n", 1 << 20, 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr := newFrameReader(strings.NewReader(tt.stream), DefaultMaxLineBytes, tt.maxRep)
			fr.maxLines = tt.maxLines
			r, err := fr.readReply()
			switch {
			case tt.ok && err != nil:
				t.Fatalf("error %v", err)
			case !tt.ok && !errors.Is(err, ErrTooLarge):
				t.Fatalf("%d lines, error %v; want too large", len(r.Lines), err)
			}
		})
	}
}

// With the default bounds, 16 MiB of 2-byte lines stop at the line cap
// (the byte bound counted with each line's cost would stop them a little
// later), long before the 8 M lines the bytes hold.
func TestFrameTinyLinesDefault(t *testing.T) {
	n := (DefaultMaxReplyBytes - 13) / 2
	r, err := newFrameReader(tinyLinesReader(n), DefaultMaxLineBytes, DefaultMaxReplyBytes).readReply()
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%d lines, error %v; want too large", len(r.Lines), err)
	}
	if most := min(DefaultMaxReplyLines, DefaultMaxReplyBytes/lineCost); len(r.Lines) > most {
		t.Errorf("kept %d lines, want at most %d", len(r.Lines), most)
	}
}
