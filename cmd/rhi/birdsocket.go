package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/verify"
)

// Hints added to a permission error on BIRD's control socket (Debian's is
// bird:bird 0660). The daemon's user gets a group's membership only when
// the process starts, hence the restart.
const (
	birdHintDaemon = "the rhi user must be in BIRD's group (usermod -aG bird rhi; systemctl restart rhi)"
	birdHintVerify = "run rhi verify as root or as a user in BIRD's group (the rhi user: usermod -aG bird rhi)"
)

// birdHint adds hint to err when err is a permission error, which is what
// connecting to BIRD's socket without being in its group gives.
func birdHint(err error, hint string) error {
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return fmt.Errorf("%w: %s", err, hint)
}

// birdSocket is the daemon's confirmer: verify.Socket with the hint on a
// refused connection, so that /status, `rhi status`, `rhi drain` and the log
// say what to do.
type birdSocket struct{ verify.Socket }

func (s birdSocket) Check(ctx context.Context, in router.Input) router.Report {
	rep := s.Socket.Check(ctx, in)
	rep.Err = birdHint(rep.Err, birdHintDaemon)
	return rep
}
