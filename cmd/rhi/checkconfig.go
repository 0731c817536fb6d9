package main

import (
	"fmt"
	"io"

	"github.com/rhi-daemon/rhi/internal/config"
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
