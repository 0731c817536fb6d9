package guardbird

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/rhi-daemon/rhi/bird"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
)

// textBird answers from transcripts without a socket: each reply is split
// into lines as the connection would (codes kept, continuations inherit).
type textBird map[string]string

func (b textBird) Exec(_ context.Context, cmd string) (bird.Reply, error) {
	var r bird.Reply
	prev := 0
	for _, line := range strings.Split(strings.TrimSuffix(b[cmd], "\n"), "\n") {
		if len(line) >= 5 && (line[4] == '-' || line[4] == ' ') && strings.Trim(line[:4], "0123456789") == "" {
			code := int(line[0]-'0')*1000 + int(line[1]-'0')*100 + int(line[2]-'0')*10 + int(line[3]-'0')
			r.Lines = append(r.Lines, bird.Line{Code: code, Text: line[5:]})
			prev = code
			if line[4] == ' ' {
				r.Code = code
				break
			}
			continue
		}
		r.Lines = append(r.Lines, bird.Line{Code: prev, Text: strings.TrimPrefix(line, " ")})
	}
	if bird.IsErrorCode(r.Code) {
		return r, &bird.Error{Code: r.Code}
	}
	return r, nil
}

// FuzzRead feeds Read any guard dump and "show protocols all": it never
// panics, and every VIP asked is either answered or unknown, never both.
func FuzzRead(f *testing.F) {
	for _, v := range versions {
		for _, top := range []string{"ebgp", "sameas", "ibgp"} {
			f.Add(transcript(f, v+"-"+top+"-protocols-all.txt"), transcript(f, v+"-"+top+"-guard4.txt"))
		}
	}
	vips := []netip.Prefix{vip4, none}
	f.Fuzz(func(t *testing.T, protos, dump string) {
		v := Read(context.Background(), textBird{protocolsCommand: protos, DumpCommand(birdconf.GuardTable4): dump}, site1, vips)
		for _, p := range vips {
			_, served := v.Serving[p]
			_, unknown := v.Unknown[p]
			if served == unknown && v.Err == nil {
				t.Fatalf("%s: served %v, unknown %v: want exactly one", p, served, unknown)
			}
		}
	})
}
