package rtnl

import (
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// ack is an acknowledgement of request seq: errno 0 for success.
func ack(seq uint32, errno unix.Errno) []byte {
	payload := make([]byte, 4+nlmsgHdrLen)
	binary.NativeEndian.PutUint32(payload, uint32(-int32(errno)))
	return nlmsg(unix.NLMSG_ERROR, 0, seq, payload)
}

func TestParseAcks(t *testing.T) {
	var b []byte
	b = append(b, ack(7, 0)...)                          // late: before first
	b = append(b, nlmsg(unix.NLMSG_DONE, 0, 11, nil)...) // not an acknowledgement
	b = append(b, ack(11, 0)...)                         // errs[1]
	b = append(b, ack(10, unix.EEXIST)...)               // errs[0], out of order
	b = append(b, ack(11, unix.EPERM)...)                // errs[1] again: the first answer stands
	b = append(b, ack(13, unix.EADDRNOTAVAIL)...)        // past the chunk
	errs, got := make([]error, 3), make([]bool, 3)
	n, err := parseAcks(b, 10, errs, got)
	if err != nil || n != 2 {
		t.Fatalf("parseAcks = %d, %v; want 2, nil", n, err)
	}
	if !errors.Is(errs[0], unix.EEXIST) || errs[1] != nil || !got[0] || !got[1] || got[2] {
		t.Errorf("answers %v, got %v", errs, got)
	}
	if _, err := parseAcks(nlmsg(unix.NLMSG_ERROR, 0, 10, []byte{1}), 10, make([]error, 1), make([]bool, 1)); err == nil {
		t.Error("a short acknowledgement parsed")
	}
	if _, err := parseAcks([]byte{0xff, 0xff, 0, 0, 2, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0}, 10, make([]error, 1), make([]bool, 1)); err == nil {
		t.Error("a message longer than its datagram parsed")
	}
}

// FuzzParseAcks: any datagram either parses or fails; it never answers
// more changes than there are, nor one twice.
func FuzzParseAcks(f *testing.F) {
	f.Add(append(ack(1, 0), ack(2, unix.EEXIST)...), uint32(1))
	f.Add(ack(0xffffffff, 0), uint32(0xffffffff))
	f.Fuzz(func(t *testing.T, b []byte, first uint32) {
		errs, got := make([]error, 4), make([]bool, 4)
		n, _ := parseAcks(b, first, errs, got)
		answered := 0
		for _, g := range got {
			if g {
				answered++
			}
		}
		if n != answered || n > len(errs) {
			t.Fatalf("parseAcks says %d answers, marked %d", n, answered)
		}
	})
}
