package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rhi-daemon/rhi/internal/router"
)

// Service states of a Nagios/Icinga plugin, its exit codes (Monitoring
// Plugins Development Guidelines).
const (
	nagiosOK       = 0
	nagiosWarning  = 1
	nagiosCritical = 2
	nagiosUnknown  = 3
)

var nagiosStates = [...]string{"OK", "WARNING", "CRITICAL", "UNKNOWN"}

const nagiosHelp = `With --nagios, stdout holds one Nagios/Icinga plugin line, e.g.
  RHI OK - 2 VIPs agree, 2 of 2 sessions Established | vips=2 agree=2 disagree=0 sessions_up=2
and the exit code is the plugin state, the worst that applies:
  2  CRITICAL  a VIP disagrees: BIRD announces one rhi wants withdrawn, or
               does not carry one rhi wants announced
  1  WARNING   every VIP agrees, but a selected protocol is not Established
               (or missing, or not BGP), or BIRD lacks a direct or BGP protocol
  3  UNKNOWN   could not check (as exit 2 above, bad usage included), or a
               VIP was NOT JUDGED and nothing else is wrong
  0  OK        every VIP agrees, every selected protocol is Established
Perfdata: vips (VIPs checked), agree, disagree, sessions_up (selected
protocols Established). Nothing goes to stderr but a bad flag's complaint.

`

// nagiosLimit bounds how many VIPs or protocols the line names.
const nagiosLimit = 3

// nagiosLine renders a report that was made (rep.Err is nil) as the plugin
// state and its one line. notJudged are the VIPs whose health was unknown.
func nagiosLine(rep router.Report, notJudged []string) (int, string) {
	var disagree, problems []string
	for _, v := range rep.VIPs {
		if !v.Agrees {
			disagree = append(disagree, fmt.Sprintf("%s (%s)", v.Prefix, v.Problem))
		}
	}
	up := 0
	for _, p := range rep.Protocols {
		if p.Established {
			up++
		}
		if p.Problem != "" {
			problems = append(problems, p.Name+": "+p.Problem)
		}
	}
	problems = append(problems, rep.Problems...)
	agree := len(rep.VIPs) - len(disagree)
	sessions := fmt.Sprintf("%d of %d sessions Established", up, len(rep.Protocols))

	state, text := nagiosOK, fmt.Sprintf("%d VIPs agree, %s", agree, sessions)
	switch {
	case len(disagree) > 0:
		state = nagiosCritical
		text = fmt.Sprintf("%d of %d VIPs disagree with BIRD: %s; %s", len(disagree), len(rep.VIPs), nagiosList(disagree), sessions)
	case len(problems) > 0:
		state = nagiosWarning
		text = fmt.Sprintf("%d VIPs agree, %s: %s", agree, sessions, nagiosList(problems))
	case len(notJudged) > 0:
		state = nagiosUnknown
		text = fmt.Sprintf("%d of %d VIPs NOT JUDGED (health unknown): %s; %s", len(notJudged), len(rep.VIPs), nagiosList(notJudged), sessions)
	}
	perf := fmt.Sprintf("vips=%d agree=%d disagree=%d sessions_up=%d", len(rep.VIPs), agree, len(disagree), up)
	return state, "RHI " + nagiosStates[state] + " - " + nagiosText(text) + " | " + perf
}

// nagiosList names the first few items and counts the rest.
func nagiosList(items []string) string {
	items = slices.Clone(items)
	if len(items) <= nagiosLimit {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:nagiosLimit], "; "), len(items)-nagiosLimit)
}

// nagiosText keeps text on one line and out of the perfdata: "|" starts
// perfdata for Nagios.
func nagiosText(s string) string {
	return strings.NewReplacer("|", "/", "\n", " ", "\r", " ").Replace(s)
}

// writeNagios prints the plugin line and returns the state as exit code.
func writeNagios(stdout io.Writer, state int, line string) int {
	if _, err := fmt.Fprintln(stdout, line); err != nil {
		return nagiosUnknown
	}
	return state
}

// writeNagiosReport prints the plugin line of rep and returns its state.
func writeNagiosReport(stdout io.Writer, rep router.Report, notJudged []jsonNotJudged) int {
	if rep.Err != nil {
		return nagiosCouldNotCheck(stdout, rep.Err)
	}
	var vips []string
	for _, n := range notJudged {
		vips = append(vips, n.VIP)
	}
	state, line := nagiosLine(rep, vips)
	return writeNagios(stdout, state, line)
}

// nagiosCouldNotCheck is the UNKNOWN line for a check that was not made.
func nagiosCouldNotCheck(stdout io.Writer, err error) int {
	return writeNagios(stdout, nagiosUnknown, "RHI UNKNOWN - could not check: "+nagiosText(err.Error()))
}

// nagiosAsked tells whether args ask for --nagios, for errors met before
// the flags are parsed (a bad flag is UNKNOWN too).
func nagiosAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--nagios" || a == "-nagios" || a == "--nagios=true" || a == "-nagios=true" {
			return true
		}
	}
	return false
}
