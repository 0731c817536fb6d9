package apisix

import (
	"math/rand/v2"
	"testing"
)

// naivePlain and naiveQuote are the byte-by-byte loops skipPlain and
// skipToQuote replace.
func naivePlain(b []byte, i int) int {
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

func naiveQuote(b []byte, i int) int {
	for i < len(b) && b[i] != '"' && b[i] != '\\' {
		i++
	}
	return i
}

// checkSkips marks itself a helper only when it fails: TestSkipPlain calls
// it millions of times, and t.Helper walks the stack on every call.
func checkSkips(t *testing.T, b []byte, i int) {
	if got, want := skipPlain(b, i), naivePlain(b, i); got != want {
		t.Helper()
		t.Fatalf("skipPlain(%q, %d) = %d, want %d", b, i, got, want)
	}
	if got, want := skipToQuote(b, i), naiveQuote(b, i); got != want {
		t.Helper()
		t.Fatalf("skipToQuote(%q, %d) = %d, want %d", b, i, got, want)
	}
}

// TestSkipPlain puts every byte value at every position of a word, after
// plain bytes of every kind (a borrow from a byte below could hide or fake
// a mark), and also two stop bytes in one word, at every start and length.
func TestSkipPlain(t *testing.T) {
	fillers := []byte{' ', '!', '#', '[', ']', 'a', 0x7f, 0x80, 0xa2, 0xdc, 0xff}
	for _, fill := range fillers {
		for c := 0; c < 256; c++ {
			for pos := 0; pos < 20; pos++ {
				b := make([]byte, 24)
				for k := range b {
					b[k] = fill
				}
				b[pos] = byte(c)
				for start := 0; start <= pos; start++ {
					checkSkips(t, b, start)
					checkSkips(t, b[:pos+1], start)
					checkSkips(t, b[:pos], start)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	stops := []byte{0, 0x1f, '"', '\\', 0x20, 0x21, 0x5b, 0x5d, 0x23, 0x80, 0xff}
	for range 20000 { // FuzzSkipPlain draws more
		b := make([]byte, r.IntN(40))
		for k := range b {
			if r.IntN(6) == 0 {
				b[k] = stops[r.IntN(len(stops))]
			} else {
				b[k] = byte(r.IntN(256))
			}
		}
		checkSkips(t, b, r.IntN(len(b)+1))
	}
}

func FuzzSkipPlain(f *testing.F) {
	f.Add([]byte(`abcdefgh"ijk`), 0)
	f.Add([]byte("abc\x1fdefghijklmnop\\"), 2)
	f.Add([]byte("\xff\xfe\"\x00 !\x21\x22\x23\x5b\x5c\x5d"), 1)
	f.Fuzz(func(t *testing.T, b []byte, i int) {
		if i < 0 || i > len(b) {
			return
		}
		checkSkips(t, b, i)
	})
}
