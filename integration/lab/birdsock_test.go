package lab

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeBird serves BIRD's greeting and then, for each command line it reads,
// the captured reply in replies (or stalls when the reply is "stall").
func fakeBird(t *testing.T, replies map[string]string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "bird.ctl")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				greeting, _ := os.ReadFile("testdata/bird2.0.12-greeting.txt")
				conn.Write(greeting)
				r := bufio.NewReader(conn)
				for {
					cmd, err := r.ReadString('\n')
					if err != nil {
						return
					}
					file, ok := replies[strings.TrimSuffix(cmd, "\n")]
					if !ok {
						conn.Write([]byte("9001 syntax error\n"))
						continue
					}
					if file == "stall" {
						<-done
						return
					}
					data, err := os.ReadFile(filepath.Join("testdata", file))
					if err != nil {
						t.Error(err)
						return
					}
					conn.Write(data)
				}
			}()
		}
	}()
	return sock
}

func TestRouterRoutes(t *testing.T) {
	sock := fakeBird(t, map[string]string{
		"show route 10.255.0.10/32": "lab-peer-show-route-vip.both.txt",
		"show route 10.255.0.11/32": "lab-peer-show-route-vip.none.txt",
	})
	l := &Lab{Name: "rhi-1-00000000", Dir: "/nonexistent"}
	plan(l, 2)
	l.Peer.BirdSocket = sock

	got, err := l.Peer.Routes(t.Context(), netip.MustParsePrefix("10.255.0.10/32"))
	if err != nil {
		t.Fatal(err)
	}
	var from []string
	for _, r := range got {
		from = append(from, r.From)
	}
	if diff := cmp.Diff([]string{"dc1", "dc2"}, from); diff != "" {
		t.Errorf("Routes() From (-want +got):\n%s", diff)
	}

	got, err = l.Peer.Routes(t.Context(), netip.MustParsePrefix("10.255.0.11/32"))
	if err != nil || len(got) != 0 {
		t.Errorf("Routes() of an unknown prefix = %+v, %v; want none, no error", got, err)
	}
}

func TestRouterProtocols(t *testing.T) {
	sock := fakeBird(t, map[string]string{"show protocols": "lab-peer-show-protocols.txt"})
	r := &Router{Name: "peer", BirdSocket: sock, sessions: make([]session, 4)}
	ok, err := r.established(t.Context())
	if !ok || err != nil {
		t.Errorf("established() = %v, %v; want true", ok, err)
	}
	r.sessions = make([]session, 5)
	if ok, err := r.established(t.Context()); ok || err == nil {
		t.Errorf("established() with a session missing = %v, %v; want false and why", ok, err)
	}
}

func TestBirdcErrors(t *testing.T) {
	sock := fakeBird(t, map[string]string{"show status": "stall"})
	r := &Router{BirdSocket: sock}

	_, err := r.Birdc(t.Context(), "show foo")
	var be *BirdError
	if !errors.As(err, &be) || be.Code != 9001 {
		t.Errorf("Birdc(unknown command) error = %v, want BIRD error 9001", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.Birdc(ctx, "show status"); !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, net.ErrClosed) {
		t.Errorf("Birdc(stalled) error = %v, want the deadline", err)
	}

	if _, err := r.Birdc(t.Context(), "show status\nshutdown"); err == nil {
		t.Error("Birdc(two lines) succeeded, want a refusal")
	}

	missing := &Router{BirdSocket: filepath.Join(t.TempDir(), "none.ctl")}
	if _, err := missing.Birdc(t.Context(), "show status"); err == nil {
		t.Error("Birdc(no socket) succeeded, want an error")
	}
}
