// Package asuser runs one test of the current test binary again as another
// user, for tests that root runs and that need an unprivileged reader or
// client (a file root wrote must be readable by the daemon's user; a socket
// the daemon's user may not open). It is for tests only.
package asuser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Nobody is the uid and gid of nobody:nogroup on Debian.
const Nobody = 65534

// Run runs the test named test of the current test binary as uid:gid, with
// no supplementary groups, env added to the environment, in dir, and
// returns its combined output. dir and every directory above it up to the
// binary's copy must be searchable by that user: the binary is copied into
// dir, since go test builds it in a directory only root can enter. The run
// is bounded by 30 s.
func Run(ctx context.Context, dir, test string, uid, gid uint32, env ...string) ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, filepath.Base(exe))
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^"+test+"$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s as uid %d: %w", test, uid, err)
	}
	return out, nil
}
