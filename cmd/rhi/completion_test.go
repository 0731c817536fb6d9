package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The shell completions are generated from the commands' own --help (which
// printFlags writes from the real flag sets) and checked here, so that they
// cannot drift from the CLI: `go test ./cmd/rhi -run TestCompletion -update`
// rewrites them after a flag changes.
const (
	bashCompletion = "../../deploy/completion/rhi.bash"
	zshCompletion  = "../../deploy/completion/_rhi"
)

// commandSummary is each subcommand's one line in the zsh menu.
var commandSummary = map[string]string{
	"run":          "run the daemon",
	"status":       "ask the running daemon what it is doing",
	"verify":       "check that BIRD announces what rhi wants",
	"drain":        "withdraw VIPs whatever their health, until undrained",
	"undrain":      "let health decide again",
	"reload":       "reload the running daemon's config and wait for the outcome",
	"check-config": "validate, print the effective config",
	"version":      "print the version",
}

// cliFlag is one flag as --help shows it.
type cliFlag struct {
	name, arg, usage string
}

// subcommands lists the "  rhi NAME" lines of the top-level usage, as
// packaging/gen-man.sh does.
func subcommands(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^  rhi ([a-z][a-z-]*)`).FindAllStringSubmatch(usage, -1) {
		out = append(out, m[1])
	}
	if len(out) < 5 {
		t.Fatalf("only %d subcommands in the usage", len(out))
	}
	return out
}

// helpOf runs `rhi CMD --help` and checks that it is help: exit 0, "Usage:
// rhi CMD" on stdout, nothing on stderr.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != exitOK || errb.Len() != 0 {
		t.Errorf("rhi %s: exit %d, stderr %q", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

var flagLine = regexp.MustCompile(`(?m)^  --([a-z][a-z-]*)(?: ([A-Z]+))?\n    \t(.*)$`)

// flagsOf parses the flags out of `rhi cmd --help`.
func flagsOf(t *testing.T, cmd string) []cliFlag {
	t.Helper()
	var fl []cliFlag
	for _, m := range flagLine.FindAllStringSubmatch(helpOf(t, cmd, "--help"), -1) {
		fl = append(fl, cliFlag{name: m[1], arg: m[2], usage: m[3]})
	}
	return fl
}

// TestEverySubcommandHelp: --help and -h are help for every subcommand
// (exit 0, usage on stdout), and help spells flags "--name" throughout.
func TestEverySubcommandHelp(t *testing.T) {
	singleDash := regexp.MustCompile(`(^|[\s\[(|])-[a-z]{2,}`)
	for _, c := range subcommands(t) {
		for _, h := range []string{"--help", "-h"} {
			out := helpOf(t, c, h)
			if !strings.HasPrefix(out, "Usage: rhi "+c) {
				t.Errorf("rhi %s %s: stdout %q, want the usage", c, h, out)
			}
			if m := singleDash.FindString(out); m != "" {
				t.Errorf("rhi %s %s: %q: flags are spelt --name", c, h, m)
			}
			// Every flag of the synopsis exists, and every flag is in it.
			synopsis := strings.SplitN(out, "\n", 2)[0]
			for _, f := range flagsOf(t, c) {
				if !strings.Contains(synopsis, "--"+f.name) {
					t.Errorf("rhi %s: --%s missing from the synopsis %q", c, f.name, synopsis)
				}
			}
		}
	}
	top := helpOf(t, "--help")
	if m := singleDash.FindString(top); m != "" {
		t.Errorf("rhi --help: %q: flags are spelt --name", m)
	}
	// The top-level usage lists every flag of every subcommand.
	for _, c := range subcommands(t) {
		line := regexp.MustCompile(`(?m)^  rhi ` + regexp.QuoteMeta(c) + ` .*$`).FindString(top)
		for _, f := range flagsOf(t, c) {
			if !strings.Contains(line, "--"+f.name) {
				t.Errorf("rhi --help: the line of %s lacks --%s: %q", c, f.name, line)
			}
		}
	}
}

func TestCompletion(t *testing.T) {
	cmds := subcommands(t)
	flags := map[string][]cliFlag{}
	for _, c := range cmds {
		if commandSummary[c] == "" {
			t.Errorf("no commandSummary for %q", c)
		}
		flags[c] = flagsOf(t, c)
	}
	for path, got := range map[string]string{bashCompletion: genBash(cmds, flags), zshCompletion: genZsh(cmds, flags)} {
		if *updateGolden {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./cmd/rhi -run TestCompletion -update writes it)", err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("%s is not what the flag sets give; go test ./cmd/rhi -run TestCompletion -update (-file +flags):\n%s", filepath.Base(path), diff)
		}
	}
	if _, err := exec.LookPath("bash"); err == nil {
		if out, err := exec.Command("bash", "-n", bashCompletion).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", bashCompletion, err, out)
		}
	}
}

// TestBashCompletionCompletes sources the bash script and asks it what it
// offers, as bash would on TAB.
func TestBashCompletionCompletes(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	tests := []struct {
		line string // words; the last is being completed
		want []string
	}{
		{"rhi ch", []string{"check-config"}},
		{"rhi verify --", []string{"--bird-socket", "--config", "--help", "--json", "--nagios"}},
		{"rhi drain --no", []string{"--no-wait"}},
		{"rhi run --config ../../deploy/rhi.min", []string{"../../deploy/rhi.minimal.yaml"}},
		{"rhi drain --timeout ", nil},
	}
	for _, tc := range tests {
		words := strings.Split(tc.line, " ")
		script := fmt.Sprintf(`source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _rhi; printf '%%s\n' "${COMPREPLY[@]}"`,
			bashCompletion, shellWords(words), len(words)-1)
		out, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", tc.line, err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: offers %q, want %q", tc.line, got, tc.want)
		}
	}
}

func shellWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + w + "'"
	}
	return strings.Join(q, " ")
}

const completionHeader = "Generated by `go test ./cmd/rhi -run TestCompletion -update` from the\n# commands' flag sets (cmd/rhi/completion_test.go); do not edit."

// genBash writes the bash completion: subcommands, then each one's flags;
// files after a PATH flag, nothing after another flag that takes a value.
func genBash(cmds []string, flags map[string][]cliFlag) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for rhi(8). %s\n# shellcheck shell=bash\n\n", completionHeader)
	b.WriteString("_rhi() {\n\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} flags\n")
	fmt.Fprintf(&b, "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tmapfile -t COMPREPLY < <(compgen -W '%s help --help --version' -- \"$cur\")\n\t\treturn\n\tfi\n", strings.Join(cmds, " "))
	var paths, values []string
	b.WriteString("\tcase ${COMP_WORDS[1]} in\n")
	for _, c := range cmds {
		names := []string{}
		for _, f := range flags[c] {
			names = append(names, "--"+f.name)
			switch {
			case f.arg == "PATH" && !slices.Contains(paths, "--"+f.name):
				paths = append(paths, "--"+f.name)
			case f.arg != "" && f.arg != "PATH" && !slices.Contains(values, "--"+f.name):
				values = append(values, "--"+f.name)
			}
		}
		names = append(names, "--help")
		fmt.Fprintf(&b, "\t%s) flags='%s' ;;\n", c, strings.Join(names, " "))
	}
	b.WriteString("\t*) return ;;\n\tesac\n")
	b.WriteString("\tcase $prev in\n")
	if len(paths) > 0 {
		fmt.Fprintf(&b, "\t%s)\n\t\tmapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n\t\treturn\n\t\t;;\n", strings.Join(paths, " | "))
	}
	if len(values) > 0 {
		fmt.Fprintf(&b, "\t%s)\n\t\tCOMPREPLY=()\n\t\treturn\n\t\t;;\n", strings.Join(values, " | "))
	}
	b.WriteString("\tesac\n\tmapfile -t COMPREPLY < <(compgen -W \"$flags\" -- \"$cur\")\n}\ncomplete -F _rhi rhi\n")
	return b.String()
}

// zshQuote makes s safe inside a single-quoted _arguments spec's
// description.
func zshQuote(s string) string {
	return strings.NewReplacer("'", `'\''`, "[", `\[`, "]", `\]`, ":", `\:`).Replace(s)
}

// genZsh writes the zsh completion (_arguments per subcommand).
func genZsh(cmds []string, flags map[string][]cliFlag) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef rhi\n# zsh completion for rhi(8). %s\n\n", completionHeader)
	b.WriteString("_rhi() {\n\tlocal -a commands\n\tcommands=(\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t\t'%s:%s'\n", c, zshQuote(commandSummary[c]))
	}
	b.WriteString("\t)\n\tif (( CURRENT == 2 )); then\n\t\t_describe -t commands 'rhi command' commands\n\t\treturn\n\tfi\n")
	b.WriteString("\tlocal cmd=${words[2]}\n\tshift words\n\t(( CURRENT-- ))\n\tcase $cmd in\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t%s)\n\t\t_arguments \\\n", c)
		for _, f := range flags[c] {
			spec := fmt.Sprintf("--%s[%s]", f.name, zshQuote(f.usage))
			switch f.arg {
			case "":
			case "PATH":
				spec += ":path:_files"
			case "D":
				spec += ":duration (e.g. 30s): "
			default:
				spec += ":" + strings.ToLower(f.arg) + ": "
			}
			fmt.Fprintf(&b, "\t\t\t'%s' \\\n", spec)
		}
		b.WriteString("\t\t\t'(- *)--help[print help]'")
		if c == "drain" || c == "undrain" {
			b.WriteString(" \\\n\t\t\t'*:VIP: '")
		}
		b.WriteString("\n\t\t;;\n")
	}
	b.WriteString("\tesac\n}\n\n_rhi \"$@\"\n")
	return b.String()
}
