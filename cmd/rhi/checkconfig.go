package main

import (
	"fmt"
	"io"

	"github.com/rhi-daemon/rhi/internal/config"
)

func cmdCheckConfig(args []string, stdout, stderr io.Writer) int {
	fs := flags("check-config", "[--config PATH]", stdout, stderr)
	path := fs.String("config", defaultConfig, "configuration file")
	if code, ok := parse(fs, args, stdout); !ok {
		return code
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return exitBadInput
	}
	out, err := config.Format(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "rhi: %v\n", err)
		return exitFailure
	}
	stdout.Write(out)
	return exitOK
}
