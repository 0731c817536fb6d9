package birdtest_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/bird/birdtest"
)

func TestServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := birdtest.NewServer(t, map[string]string{"show status": "1000-BIRD 2.0.12\n0013 Daemon is up and running\n"})
	c, err := bird.Dial(ctx, s.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	if r, err := c.Exec(ctx, "show status"); err != nil || r.Code != 13 {
		t.Fatalf("show status = %+v, %v", r, err)
	}
	var be *bird.Error
	if _, err := c.Exec(ctx, "show nothing"); !errors.As(err, &be) || be.Code != 9001 {
		t.Fatalf("unknown command: err = %v, want 9001", err)
	}
	s.Set("show nothing", "0000 \n")
	if _, err := c.Exec(ctx, "show nothing"); err != nil {
		t.Fatalf("after Set: %v", err)
	}
	s.Stall("show status")
	select {
	case <-s.Stalled():
		t.Fatal("Stalled before any stalled command")
	default:
	}
	// The deadline comes once the server has read the command and stalls:
	// the exchange can only end there, with the deadline (ctx's 10 s bound
	// a failing run).
	short, cancelShort := birdtest.Expire(ctx, s.Stalled())
	defer cancelShort()
	if _, err := c.Exec(short, "show status"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled command: err = %v, want a deadline error", err)
	}
	select {
	case <-s.Stalled():
	default:
		t.Error("Stalled not closed after the stalled command")
	}
	// The server records the stalled command on its own goroutine, which
	// a loaded machine may not have run yet when the client's deadline
	// passes: wait for it (ctx bounds a failing run).
	want := []string{"restrict", "show status", "show nothing", "show nothing", "show status"}
	if err := s.WaitCommands(ctx, len(want)); err != nil {
		t.Error(err)
	}
	if diff := cmp.Diff(want, s.Commands()); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}

// A stalled command is never answered: once the client has hung up its
// side, the server ends the connection having sent nothing more, not even
// for a command that follows. No waiting: the end of the stream proves it.
func TestStallNeverAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := birdtest.NewServer(t, map[string]string{"show status": "0013 Daemon is up and running\n"})
	s.Stall("show status")
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", s.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline) // bounds a failing run
	br := bufio.NewReader(nc)
	if line, err := br.ReadString('\n'); err != nil || line != "0001 BIRD 2.0.12 ready.\n" {
		t.Fatalf("greeting %q, %v", line, err)
	}
	if _, err := io.WriteString(nc, "show status\nshow nothing\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Stalled():
	case <-ctx.Done():
		t.Fatal("Stalled not closed after the stalled command")
	}
	if err := nc.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after a stalled command the server sent %q (%v), want nothing", rest, err)
	}
}

func TestExpire(t *testing.T) {
	parent, cancelParent := context.WithTimeout(context.Background(), time.Hour)
	defer cancelParent()
	at := make(chan struct{})
	ctx, cancel := birdtest.Expire(parent, at)
	defer cancel()
	want, _ := parent.Deadline()
	if d, ok := ctx.Deadline(); !ok || !d.Equal(want) {
		t.Errorf("Deadline() = %v, %v; want the parent's %v", d, ok, want)
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err() = %v before at is closed", err)
	}
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	close(at)
	<-ctx.Done()
	<-child.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Errorf("Err() = %v, child %v; want the deadline for both", ctx.Err(), child.Err())
	}
	if parent.Err() != nil {
		t.Errorf("parent ended: %v", parent.Err())
	}

	ctx, cancel = birdtest.Expire(parent, make(chan struct{}))
	cancel()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("after cancel: Err() = %v, want context.Canceled", ctx.Err())
	}
	ctx, cancel = birdtest.Expire(parent, make(chan struct{}))
	defer cancel()
	cancelParent()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("after the parent's end: Err() = %v, want the parent's", ctx.Err())
	}
}

func TestDeadlines(t *testing.T) {
	d := birdtest.Deadlines{Timeout: time.Minute}
	enter := func(ctx context.Context, cmd string) {
		_, cancel := d.Enter(ctx, cmd)
		cancel()
	}
	first, cancel1 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel1()
	enter(first, "own")
	second, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	enter(second, "own again")
	if len(d.Problems) != 0 {
		t.Fatalf("deadlines of their own: %q", d.Problems)
	}
	enter(second, "shared")
	far, cancel3 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel3()
	enter(far, "too far")
	enter(context.Background(), "none")
	if len(d.Problems) != 3 || !strings.Contains(d.Problems[0], `"shared"`) ||
		!strings.Contains(d.Problems[1], `"too far"`) || !strings.Contains(d.Problems[2], `"none"`) {
		t.Errorf("Problems = %q, want one each for shared, too far, none", d.Problems)
	}
}
