package bird

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// encode writes a reply back in wire form, every line with a full code.
func encode(r Reply) string {
	var b strings.Builder
	for i, l := range r.Lines {
		sep := '-'
		if i == len(r.Lines)-1 {
			sep = ' '
		}
		fmt.Fprintf(&b, "%04d%c%s\n", l.Code, sep, l.Text)
	}
	return b.String()
}

// FuzzFrame feeds arbitrary streams to the framing reader and the parsers.
// Nothing may panic, the reader must stop within the bounds, and every reply
// it accepts must survive a round trip through its wire form.
func FuzzFrame(f *testing.F) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		f.Fatal(err)
	}
	tiers, err := filepath.Glob("testdata/tiers/*.txt")
	if err != nil {
		f.Fatal(err)
	}
	files = append(files, tiers...) // BIRD 2.0.12, 2.17.6 and 3.1.8 alike
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("+async\n 1007\n0000"))
	f.Add([]byte("1007-Table master4:\n                      unicast [p 1] * (1)\n0000 \n"))

	const maxLine, maxReply = 256, 4096
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := newFrameReader(bytes.NewReader(data), maxLine, maxReply)
		for n := 0; ; n++ {
			if n > len(data)/5+1 { // a reply takes at least "0000 \n"
				t.Fatalf("more replies (%d) than the input can hold", n)
			}
			r, err := fr.readReply()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if !errors.Is(err, ErrFraming) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("unexpected kind of error: %v", err)
				}
				return
			}
			if len(r.Lines) == 0 || r.Lines[len(r.Lines)-1].Code != r.Code {
				t.Fatalf("reply %+v does not end with its end line", r)
			}
			size := 0
			for _, l := range r.Lines {
				if l.Code < 0 || l.Code > 9999 {
					t.Fatalf("code %d out of range", l.Code)
				}
				if len(l.Text) > maxLine || strings.Contains(l.Text, "\n") {
					t.Fatalf("line %q breaks the bounds", l.Text)
				}
				size += len(l.Text)
			}
			if size > maxReply {
				t.Fatalf("reply of %d bytes over the bound", size)
			}
			again, err := newFrameReader(strings.NewReader(encode(r)), maxLine+5, maxReply*2).readReply()
			if err != nil || encode(again) != encode(r) {
				t.Fatalf("round trip of %+v: %+v, %v", r, again, err)
			}
			// The parsers must not panic, whatever they make of it.
			_, _ = ParseProtocols(r)
			_, _ = ParseProtocolsAll(r)
			_, _ = ParseRoutes(r)
			_, _ = ParseExport(r, replyError(r))
		}
	})
}
