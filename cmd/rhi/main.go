// Command rhi is the Route Health Injection daemon: it announces a VIP over
// BGP (through BIRD and the VIP interface) only while its APISIX upstreams
// are healthy. See README.md and `rhi --help`.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/logfile"
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
  rhi verify       [--config PATH] [--bird-socket PATH] [--json | --nagios]
                                                    check that BIRD announces what rhi wants
                                                    (--nagios: one plugin line, exit 0-3)
  rhi drain        [--config PATH] [--timeout D] [--no-wait] (--all | VIP...)
                                                    withdraw VIPs whatever their health, until undrained;
                                                    waits (--timeout, 30s) for the daemon and BIRD to confirm
  rhi undrain      [--config PATH] [--timeout D] [--no-wait] (--all | VIP...)
                                                    let health decide again
  rhi reload       [--config PATH] [--timeout D]    reload the running daemon's config and wait
                                                    (--timeout, 10s) for it to be applied or rejected
  rhi check-config [--config PATH] [--quiet]        validate, print the effective config
  rhi version                                       print the version

--config defaults to ` + defaultConfig + `.

Exit codes: 0 ok; 1 failure (verify: a mismatch; drain: not confirmed;
reload: rejected); 2 bad usage or invalid config (verify: could not check;
drain, reload: daemon not reachable or no answer in time; --nagios: 0 OK,
1 WARNING, 2 CRITICAL, 3 UNKNOWN). "rhi COMMAND --help" tells more.
`

func main() {
	var stderr io.Writer = os.Stderr
	// Under systemd, stderr is the journal: what a command prints there is
	// a problem, and gets the error priority; the daemon's log lines carry
	// their own (see cmdRun).
	if logfile.StderrIsJournal(os.Getenv("JOURNAL_STREAM"), os.Stderr) {
		stderr = logfile.NewPriorityWriter(os.Stderr, "<3>")
	}
	os.Exit(run(os.Args[1:], os.Stdout, stderr))
}

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
	case "reload":
		return cmdReload(rest, stdout, stderr)
	case "check-config":
		return cmdCheckConfig(rest, stdout, stderr)
	case "version", "--version":
		return cmdVersion(rest, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "rhi: unknown command %q\n\n%s", cmd, usage)
	return exitBadInput
}

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs := flags("version", "", stdout, stderr)
	if code, ok := parse(fs, args, stdout); !ok {
		return code
	}
	fmt.Fprintf(stdout, "rhi %s\n", version)
	return exitOK
}

// flags builds a subcommand's flag set; -h prints its usage to stdout.
func flags(name, synopsis string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("rhi "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\n", strings.TrimSpace("Usage: rhi "+name+" "+synopsis))
		if hasFlags(fs) {
			fmt.Fprintln(fs.Output(), "Flags:")
			printFlags(fs)
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// flagArgs names the argument of a flag in help (and completion) where its
// type alone says too little.
var flagArgs = map[string]string{"config": "PATH", "bird-socket": "PATH"}

// flagArg is the argument placeholder of f: "" for a boolean flag.
func flagArg(f *flag.Flag) string {
	if a, ok := flagArgs[f.Name]; ok {
		return a
	}
	switch name, _ := flag.UnquoteUsage(f); name {
	case "":
		return ""
	case "duration":
		return "D"
	default:
		return strings.ToUpper(name)
	}
}

// printFlags is flag.PrintDefaults spelling each flag "--name", as the
// synopses do (the flag package accepts one dash or two).
func printFlags(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		line := "  --" + f.Name
		if a := flagArg(f); a != "" {
			line += " " + a
		}
		_, usage := flag.UnquoteUsage(f)
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			line += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintln(fs.Output(), line)
	})
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
	cfg, err := config.Load(path, apisix.UpstreamKey)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return nil, false
	}
	return cfg, true
}
