// Command rhi is the Route Health Injection daemon: it announces a VIP over
// BGP (through BIRD and the VIP interface) only while its APISIX upstreams
// are healthy. See README.md and `rhi -h`.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rhi-daemon/rhi/internal/config"
)

// version is set at build time: -ldflags "-X main.version=…".
var version = "dev"

const defaultConfig = "/etc/rhi/rhi.yaml"

// Exit codes shared by every subcommand.
const (
	exitOK       = 0
	exitFailure  = 1 // a run failed, or verify found a mismatch
	exitBadInput = 2 // bad usage or config, or verify could not check
)

const usage = `rhi — Route Health Injection for APISIX and BIRD

Usage:
  rhi run          [--config PATH] [--debug] [--dry-run]
                                                    run the daemon (--dry-run: change nothing)
  rhi status       [--config PATH] [--json]         ask the running daemon what it is doing
  rhi verify       [--config PATH] [--bird-socket PATH] [--json]
                                                    check that BIRD announces what rhi wants
  rhi drain        [--config PATH] (--all | VIP...)  withdraw VIPs whatever their health, until undrained;
                                                    waits for the daemon and BIRD to confirm
  rhi undrain      [--config PATH] (--all | VIP...)  let health decide again
  rhi check-config [--config PATH] [--quiet]        validate, print the effective config
  rhi version                                       print the version

--config defaults to ` + defaultConfig + `.

Exit codes: 0 ok; 1 failure (verify: a mismatch; drain: not confirmed); 2 bad
usage or invalid config (verify: could not check; drain: daemon not reachable).
"rhi COMMAND -h" tells more.
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run dispatches a subcommand and returns the process exit code, so that
// deferred clean-ups run before the process exits.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadInput
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return cmdRun(rest, stdout, stderr)
	case "status":
		return cmdStatus(rest, stdout, stderr)
	case "verify":
		return cmdVerify(rest, stdout, stderr)
	case "drain":
		return cmdDrain("drain", true, rest, stdout, stderr)
	case "undrain":
		return cmdDrain("undrain", false, rest, stdout, stderr)
	case "check-config":
		return cmdCheckConfig(rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "rhi %s\n", version)
		return exitOK
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "rhi: unknown command %q\n\n%s", cmd, usage)
	return exitBadInput
}

// flags builds a subcommand's flag set; -h prints its usage to stdout.
func flags(name, synopsis string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("rhi "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: rhi %s %s\n\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args and maps -h to exit 0 and bad flags to exit 2; ok is
// false when the caller should return code. Positional arguments are
// refused.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, ok bool) {
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code, ok
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "rhi: unexpected argument %q\n", fs.Arg(0))
		return exitBadInput, false
	}
	return 0, true
}

// parseFlags is parse that leaves positional arguments to the caller. Help
// goes to stdout once; a bad flag's error and the usage go to stderr.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, ok bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(stdout)
			fs.Usage()
			return exitOK, false
		}
	}
	if err := fs.Parse(args); err != nil {
		return exitBadInput, false
	}
	return 0, true
}

// loadConfig loads the config at path; on failure it prints every problem
// to stderr and ok is false (the caller exits 2).
func loadConfig(path string, stderr io.Writer) (cfg *config.Config, ok bool) {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return nil, false
	}
	return cfg, true
}
