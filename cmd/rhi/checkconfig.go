package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/drain"
)

func cmdCheckConfig(args []string, stdout, stderr io.Writer) int {
	fs := flags("check-config", "[--config PATH] [--quiet]", stdout, stderr)
	path := fs.String("config", defaultConfig, "configuration file")
	// The unit runs it before every start and reload: the journal gets the
	// problems, not the whole configuration each time.
	quiet := fs.Bool("quiet", false, "print nothing when the configuration is valid (problems still go to stderr)")
	if code, ok := parse(fs, args, stdout); !ok {
		return code
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return exitBadInput
	}
	// Warnings go to stderr even with --quiet: the journal should see them.
	for _, w := range config.Warnings(cfg) {
		fmt.Fprintf(stderr, "%s: warning: %s\n", *path, w)
	}
	if w := drainFileWarning(cfg.DrainFile, drain.Timeout); w != "" {
		fmt.Fprintf(stderr, "%s: warning: %s\n", *path, w)
	}
	if *quiet {
		return exitOK
	}
	out, err := config.Format(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "rhi: %v\n", err)
		return exitFailure
	}
	stdout.Write(out)
	return exitOK
}

// drainFileWarning reads drain_file as the daemon's first look will, within
// timeout, and says what is wrong with it: a file that cannot be read at
// start-up makes `rhi run` treat every VIP as drained until it can. It is
// a warning, not a failure: check-config runs before every start
// (ExecStartPre), and a typo in the drain file must not keep rhi from
// starting, drained. A missing file is fine (nothing drained).
func drainFileWarning(path string, timeout time.Duration) string {
	if path == "" {
		return ""
	}
	found := make(chan error, 1)
	go func() {
		var err error
		switch st := drain.StampOf(path); {
		case st.Err != "":
			err = errors.New(st.Err)
		case !st.Exist:
		case !st.Type.IsRegular():
			err = fmt.Errorf("not a regular file (%s)", st.Type)
		default:
			_, err = drain.Read(path)
		}
		found <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case err = <-found:
	case <-t.C:
		err = fmt.Errorf("no answer within %v", timeout)
	}
	if err == nil {
		return ""
	}
	return fmt.Sprintf("drain_file %q cannot be used (%v): a starting rhi treats every VIP as drained until it can be read; a running one keeps the drains in force", path, err)
}
