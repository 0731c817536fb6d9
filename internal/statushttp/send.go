package statushttp

import (
	"net/http"
	"time"
)

// How long a client may take to read a response. Each write of at most
// sendChunk bytes must be taken within writeStall (the kernel's socket
// buffer in front of it: a client that reads nothing for that long is cut
// off, and the document it held is let go), and the whole response
// within writeTotal (http.Server's WriteTimeout too).
const (
	sendChunk  = 64 << 10
	writeStall = 5 * time.Second
	writeTotal = 30 * time.Second
)

// sender writes a response in chunks, each with its own write deadline:
// writeStall from now, never past writeTotal after the request came. Its
// first error sticks: every later write fails with it.
type sender struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	end   time.Time
	stall time.Duration
	now   func() time.Time
	err   error
}

func newSender(w http.ResponseWriter, now func() time.Time, stall, total time.Duration) *sender {
	return &sender{w: w, rc: http.NewResponseController(w), end: now().Add(total), stall: stall, now: now}
}

// Write writes p, sendChunk bytes at a time.
func (s *sender) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && s.err == nil {
		c := p[:min(len(p), sendChunk)]
		dl := s.now().Add(s.stall)
		if dl.After(s.end) {
			dl = s.end
		}
		// ErrNotSupported from a writer that is not a connection's (a
		// test's recorder): it cannot stall.
		_ = s.rc.SetWriteDeadline(dl)
		var k int
		k, s.err = s.w.Write(c)
		n += k
		p = p[k:]
	}
	return n, s.err
}
