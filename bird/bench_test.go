package bird

import (
	"errors"
	"strings"
	"testing"
)

func BenchmarkReadReply(b *testing.B) {
	data := readFile(b, "bird2.0.12-show-protocols-all-peer_b.up-vip.txt")
	fr := newFrameReader(&endless{data: data}, DefaultMaxLineBytes, DefaultMaxReplyBytes)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fr.readReply(); err != nil {
			b.Fatal(err)
		}
	}
}

// endless repeats data for ever, as a socket full of replies would.
type endless struct {
	data string
	off  int
}

func (e *endless) Read(p []byte) (int, error) {
	n := copy(p, e.data[e.off:])
	e.off = (e.off + n) % len(e.data)
	return n, nil
}

func BenchmarkParseProtocolsAll(b *testing.B) {
	r := readTranscript(b, "bird2.0.12-show-protocols-all-peer_b.up-vip.txt")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseProtocolsAll(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRoutes(b *testing.B) {
	r := readTranscript(b, "bird2.0.12-show-route-vip-all.up-vip.txt")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRoutes(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseExport(b *testing.B) {
	r := readTranscript(b, "bird2.0.12-show-route-export-peer_b-vip.up-vip.txt")
	b.ReportAllocs()
	for b.Loop() {
		if st, err := ParseExport(r, nil); err != nil || st != Exported {
			b.Fatal(st, err)
		}
	}
}

// BenchmarkExec is one exchange over a unix socket with a fake BIRD: the
// cost rhi pays per question.
func BenchmarkExec(b *testing.B) {
	const cmd = "show route export peer_b.ipv4 10.255.0.10/32"
	path, _ := fakeBird(b, answer(map[string]string{cmd: readFile(b, "bird2.0.12-show-route-export-peer_b-vip.up-vip.txt")}))
	c, err := Dial(b.Context(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Exec(b.Context(), cmd); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadReplyTinyLines reads a reply of 16 MiB of
// 2-byte continuation lines (" \n"), just under the default byte bound,
// read with the default bounds. Each line costs far more memory than its
// two bytes; peak memory is best read as the test binary's maximum RSS
// (/usr/bin/time -v), minus the 16 MiB stream.
func BenchmarkReadReplyTinyLines(b *testing.B) {
	const head, end = "1007-x\n", "0000 \n"
	n := (DefaultMaxReplyBytes - len(head) - len(end)) / 2
	stream := head + strings.Repeat(" \n", n) + end
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	var lines int
	var err error
	for b.Loop() {
		var r Reply
		r, err = newFrameReader(strings.NewReader(stream), DefaultMaxLineBytes, DefaultMaxReplyBytes).readReply()
		lines = len(r.Lines)
	}
	b.ReportMetric(float64(lines), "lines-kept")
	if err != nil && !errors.Is(err, ErrTooLarge) {
		b.Fatal(err)
	}
}
