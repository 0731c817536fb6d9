package config

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Problem is one thing wrong with a configuration file.
type Problem struct {
	File string // the name given to Parse; empty if unknown
	Line int    // 1-based; 0 if the YAML library could not tell
	// Path is the key path, e.g. "vips[2].condition" (indexes count from 0).
	// It is empty only for problems with the document as a whole: a YAML
	// syntax error, or a top level that is not a mapping.
	Path    string
	Msg     string // what is wrong, lower-case, without the value
	Got     string // the value as written; empty when there is none to show
	Allowed string // what would be accepted, e.g. "all, any"; may be empty
}

// maxGot bounds how much of a value a message quotes, so that a stray
// multi-kilobyte string does not drown the other problems.
const maxGot = 80

// String renders the problem as `FILE:LINE: PATH: MSG (got "VALUE"; allowed: …)`,
// leaving out whichever parts are empty.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		b.WriteByte(':')
	}
	if p.Line > 0 {
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteByte(':')
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	var extra []string
	if p.Got != "" {
		extra = append(extra, "got "+strconv.Quote(truncate(p.Got)))
	}
	if p.Allowed != "" {
		extra = append(extra, "allowed: "+p.Allowed)
	}
	if len(extra) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(extra, "; "))
		b.WriteByte(')')
	}
	return b.String()
}

func truncate(s string) string {
	if utf8.RuneCountInString(s) <= maxGot {
		return s
	}
	n := 0
	for i := range s {
		if n == maxGot {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// Errors is every problem found in one configuration file, in line order.
// Parse and Load return it as their error, so callers can use errors.As to
// inspect the problems one by one.
type Errors []Problem

// Error prints one problem per line.
func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, p := range e {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
