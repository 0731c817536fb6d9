package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// closeBeforeDeadline is how long before `go test -timeout` fires ForTest
// closes the lab: the timeout panic runs no cleanup.
const closeBeforeDeadline = 10 * time.Second

// ForTest builds a lab for a test: it skips the test when [Available] says
// the lab cannot run, fails it when bring-up fails, logs through t, and
// closes the lab in t.Cleanup (which also runs when the test panics). On
// failure the tails of BIRD's and the processes' logs go to the test log.
func ForTest(t testing.TB, opts Options) *Lab {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
	if opts.Log == nil {
		log := logrus.New()
		log.SetOutput(tbWriter{t})
		opts.Log = log
	}
	ctx, cancel := context.WithTimeout(tbContext(t), time.Minute)
	defer cancel()
	l, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(l.logTails(4 << 10))
		}
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := d.Deadline(); ok {
			if left := time.Until(deadline) - closeBeforeDeadline; left > 0 {
				timer := time.AfterFunc(left, func() {
					l.log.WithField("action", "teardown").Warn("closing the lab before the test binary's timeout")
					_ = l.Close()
				})
				t.Cleanup(func() { timer.Stop() })
			}
		}
	}
	return l
}

// tbContext is t.Context() where t has one (testing.TB does not promise it).
func tbContext(t testing.TB) context.Context {
	if c, ok := t.(interface{ Context() context.Context }); ok {
		return c.Context()
	}
	return context.Background()
}

// tbWriter sends logrus lines to the test log.
type tbWriter struct{ t testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// logTails returns the last max bytes of every log file in the lab.
func (l *Lab) logTails(max int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "logs of lab %s:\n", l.Name)
	for _, r := range l.routers() {
		files, _ := filepath.Glob(filepath.Join(r.Dir, "*"))
		for _, f := range files {
			if !strings.HasSuffix(f, ".log") && !strings.HasSuffix(f, ".stdout") && !strings.HasSuffix(f, ".stderr") {
				continue
			}
			fmt.Fprintf(&b, "==> %s <==\n%s\n", f, tail(f, max))
		}
	}
	return b.String()
}

func tail(path string, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return err.Error()
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return err.Error()
	}
	return string(data)
}
