package birdtest_test

import (
	"context"
	"errors"
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
	// Long enough that the command is sent before the deadline, however
	// loaded the machine; the stall then ends the exchange at it.
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if _, err := c.Exec(short, "show status"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled command: err = %v, want a deadline error", err)
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
