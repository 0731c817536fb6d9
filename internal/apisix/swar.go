package apisix

import (
	"encoding/binary"
	"math/bits"
)

// Strings are most of a list's bytes, and both the scanner and the walker
// pass over each of them. They go eight bytes at a time: one 64-bit load
// and a few arithmetic operations find the first of the eight that needs
// a look of its own (a quote, a backslash, or, for the scanner, a control
// character), if any. FuzzSkipPlain and TestSkipPlain hold skipPlain and
// skipToQuote to the byte-by-byte loops they replace; scanString and
// walker.str copy their word loop for a string without escapes (a call
// per string was a tenth of the list's reading), which the list's
// oracles (FuzzListReaderAgainstDecoder, FuzzDecodeListJobs, ...) hold.

const (
	lsb = 0x0101010101010101 // 0x01 in every byte
	msb = 0x8080808080808080 // 0x80 in every byte
)

// zeroBytes marks with 0x80 the bytes of x that are zero. A mark above the
// lowest can be false (a borrow), the lowest is exact: so the lowest mark
// is the first zero byte in little-endian order, and there is a mark if
// and only if there is a zero byte.
func zeroBytes(x uint64) uint64 { return (x - lsb) &^ x & msb }

// lowBytes marks, as zeroBytes does, the bytes of x below 0x20.
func lowBytes(x uint64) uint64 { return (x - 0x20*lsb) &^ x & msb }

// skipPlain returns the index of the first byte from i that is not plain
// (see plain), len(b) if there is none.
func skipPlain(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := lowBytes(x) | zeroBytes(x^'"'*lsb) | zeroBytes(x^'\\'*lsb); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

// skipToQuote returns the index of the first quote or backslash from i,
// len(b) if there is none.
func skipToQuote(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := zeroBytes(x^'"'*lsb) | zeroBytes(x^'\\'*lsb); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && b[i] != '"' && b[i] != '\\' {
		i++
	}
	return i
}
