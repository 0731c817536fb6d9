package drain

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rhi-daemon/rhi/internal/asuser"
)

// helperEnv, when set to a drain file's path, makes TestHelperRead read
// that file and print it: TestWrittenByRootReadByOwner runs this test binary
// again under another user for that.
const helperEnv = "RHI_DRAIN_HELPER_READ"

// TestWrittenByRootReadByOwner is `sudo rhi drain` against the daemon's
// StateDirectory: root writes the file into a directory an unprivileged
// user owns (0750), and that user, as the daemon does, must read it back.
// The reader is a child process with the user's credentials and no
// supplementary groups.
func TestWrittenByRootReadByOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: writes as root, reads as another user")
	}
	const uid, gid = asuser.Nobody, asuser.Nobody // any uid that is not root

	// t.TempDir's directories are 0700 root: the reader must get through.
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(base, "state")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "drain")
	if err := Write(path, set(false, "10.0.0.100/32")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != uid || st.Gid != gid || fi.Mode().Perm() != fileMode {
		t.Errorf("drain file: owner %d:%d mode %v; want %d:%d %v (the directory's owner)", st.Uid, st.Gid, fi.Mode().Perm(), uid, gid, os.FileMode(fileMode))
	}

	out, err := asuser.Run(t.Context(), base, "TestHelperRead", uid, gid, helperEnv+"="+path)
	if err != nil || !strings.Contains(string(out), "read: 10.0.0.100/32\n") {
		t.Fatalf("reading as uid %d: %v\n%s", uid, err, out)
	}
}

// TestHelperRead is the reader of TestWrittenByRootReadByOwner; on its own
// it does nothing.
func TestHelperRead(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper of TestWrittenByRootReadByOwner")
	}
	s, err := Read(path)
	if err != nil {
		t.Fatalf("as uid %d: %v", os.Getuid(), err)
	}
	for p := range s.VIPs {
		fmt.Printf("read: %s\n", p)
	}
}
