package router

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Summary is a one-line verdict for people.
func (r Report) Summary() string {
	if r.Err != nil {
		return "could not check: " + r.Err.Error()
	}
	agree, vips, unmanaged := 0, 0, 0
	for _, v := range r.VIPs {
		switch {
		case v.Expected == Unmanaged && !v.Agrees:
			unmanaged++
		case v.Expected == Unmanaged:
		case v.Agrees:
			agree++
			vips++
		default:
			vips++
		}
	}
	established := 0
	for _, p := range r.Protocols {
		if p.Established {
			established++
		}
	}
	verdict := "consistent"
	if r.ExitCode() != ExitConsistent {
		verdict = "MISMATCH"
	}
	sum := fmt.Sprintf("%s: %d of %d VIPs agree with BIRD, %d of %d protocols Established",
		verdict, agree, vips, established, len(r.Protocols))
	if unmanaged > 0 {
		sum += fmt.Sprintf(", %d unmanaged address(es) exported without a health check", unmanaged)
	}
	return sum
}

// WriteTable writes the report as aligned text: one row per VIP with a
// column per selected protocol ("exported", "no", or "-" when the protocol
// was not asked: not Established, or no channel of the VIP's family), then
// the protocols, then the summary.
func (r Report) WriteTable(w io.Writer) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	if r.Err == nil {
		cols := []string{"VIP", "EXPECTED", "INTERFACE", "BIRD TABLE"}
		for _, p := range r.Protocols {
			cols = append(cols, p.Name)
		}
		fmt.Fprintln(tw, strings.Join(append(cols, "VERDICT"), "\t"))
		for _, v := range r.VIPs {
			row := []string{v.Prefix.String(), string(v.Expected), yesNo(v.OnInterface), yesNo(v.InTable)}
			for _, p := range r.Protocols {
				exported, asked := v.Exported[p.Name]
				switch {
				case !asked:
					row = append(row, "-")
				case exported:
					row = append(row, "exported")
				default:
					row = append(row, "no")
				}
			}
			verdict := "ok"
			if !v.Agrees {
				verdict = "MISMATCH: " + v.Problem
			}
			fmt.Fprintln(tw, strings.Join(append(row, verdict), "\t"))
		}
		if len(r.VIPs) == 0 {
			fmt.Fprintln(tw, "(no VIPs)")
		}
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "PROTOCOL\tSTATE\tBGP STATE\tINFO\tVERDICT")
		for _, p := range r.Protocols {
			verdict := "ok"
			if p.Problem != "" {
				verdict = "PROBLEM: " + p.Problem
			}
			fmt.Fprintln(tw, strings.Join([]string{p.Name, dash(p.State), dash(p.BGPState), dash(p.Info), verdict}, "\t"))
		}
		if len(r.Protocols) == 0 {
			fmt.Fprintln(tw, "(no protocols)")
		}
		fmt.Fprintln(tw)
		for _, pr := range r.Problems {
			fmt.Fprintln(tw, "PROBLEM: "+pr)
		}
	}
	fmt.Fprintln(tw, r.Summary())
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// jsonReport is the JSON form of a Report.
type jsonReport struct {
	ExitCode  int             `json:"exit_code"`
	Summary   string          `json:"summary"`
	Error     string          `json:"error,omitempty"`
	Problems  []string        `json:"problems,omitempty"`
	Protocols []ProtocolState `json:"protocols"`
	VIPs      []VIPReport     `json:"vips"`
}

// MarshalJSON encodes the report with its exit code and summary, and the
// error as text, so that /status and `rhi verify --json` say the same.
func (r Report) MarshalJSON() ([]byte, error) {
	j := jsonReport{
		ExitCode:  r.ExitCode(),
		Summary:   r.Summary(),
		Problems:  r.Problems,
		Protocols: r.Protocols,
		VIPs:      r.VIPs,
	}
	if r.Err != nil {
		j.Error = r.Err.Error()
	}
	// Empty lists, not null, for consumers that iterate.
	if j.Protocols == nil {
		j.Protocols = []ProtocolState{}
	}
	if j.VIPs == nil {
		j.VIPs = []VIPReport{}
	}
	return json.Marshal(j)
}
