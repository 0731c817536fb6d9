package bird

import (
	"fmt"
	"strings"
)

// Reply codes of "show protocols".
const (
	codeProtoHeader  = 2002 // "Name Proto Table State Since Info"
	codeProtoRow     = 1002 // one protocol
	codeProtoDetails = 1006 // the "all" lines under a protocol
)

// Protocol is one row of "show protocols", with the details that
// "show protocols all" adds.
type Protocol struct {
	Name  string // e.g. "peer_b"
	Proto string // protocol type: "BGP", "Direct", "Device", "Static", …
	Table string // "---" when the protocol has several channels or none
	State string // "up", "down", "start", "stop"
	Since string // time of the last state change, as BIRD's timeformat prints it
	Info  string // e.g. "Established", "Active        Socket: Connection refused"

	// BGPState is the value of the "BGP state:" line ("Established",
	// "Active", "Connect", "Idle", "Down", …); "" when the reply had no such
	// line (plain "show protocols", or not BGP).
	BGPState string
	// Channels lists the protocol's channels ("show protocols all" only).
	Channels []Channel
}

// Channel is one channel of a protocol, from "show protocols all".
type Channel struct {
	Name  string // "ipv4", "ipv6", …
	State string // "UP", "DOWN", …
	Table string // e.g. "master4"
}

// Established reports whether the protocol is up with an Established BGP
// session. Without a "BGP state:" line it goes by the first word of Info,
// which BGP fills with the session state.
func (p Protocol) Established() bool {
	if p.State != "up" {
		return false
	}
	if p.BGPState != "" {
		return p.BGPState == "Established"
	}
	first, _, _ := strings.Cut(p.Info, " ")
	return p.Proto == "BGP" && first == "Established"
}

// Channel returns the protocol's channel named name.
func (p Protocol) Channel(name string) (Channel, bool) {
	for _, c := range p.Channels {
		if c.Name == name {
			return c, true
		}
	}
	return Channel{}, false
}

// ParseProtocols parses the reply to "show protocols [name|"pattern"]".
// Detail lines, if any, are ignored.
func ParseProtocols(r Reply) ([]Protocol, error) {
	return parseProtocols(r, false)
}

// ParseProtocolsAll parses the reply to "show protocols all [name]": the
// rows plus each protocol's BGP state and channels.
func ParseProtocolsAll(r Reply) ([]Protocol, error) {
	return parseProtocols(r, true)
}

func parseProtocols(r Reply, details bool) ([]Protocol, error) {
	if err := replyError(r); err != nil {
		return nil, err
	}
	if r.Code != CodeOK {
		return nil, fmt.Errorf("show protocols: unexpected end code %04d", r.Code)
	}
	var (
		out     []Protocol
		header  bool
		channel = -1 // index in the current protocol's Channels of the channel being described
	)
	for _, l := range r.Lines {
		switch l.Code {
		case codeProtoHeader:
			if header {
				return nil, fmt.Errorf("show protocols: second header line %q", l.Text)
			}
			header = true
		case codeProtoRow:
			if !header {
				return nil, fmt.Errorf("show protocols: row %q before the header", l.Text)
			}
			p, err := parseProtocolRow(l.Text)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
			channel = -1
		case codeProtoDetails:
			if !details {
				continue
			}
			if len(out) == 0 {
				return nil, fmt.Errorf("show protocols: detail line %q before any protocol", l.Text)
			}
			channel = parseProtocolDetail(&out[len(out)-1], channel, l.Text)
		}
	}
	if !header {
		return nil, fmt.Errorf("show protocols: no header line (code %04d) in the reply", codeProtoHeader)
	}
	return out, nil
}

// parseProtocolRow splits one row. BIRD prints it as
// "%-10s %-10s %-10s %-6s %-12s  %s": name, proto, table and state are
// single words, but Since is whatever the timeformat makes of the time and
// may hold a space ("2026-12-02 14:10:34" with "iso long"), and a long name
// pushes every later column right. So columns are not cut at fixed offsets:
// the first four are words, and Since runs up to the two spaces BIRD puts
// after it. A timeformat that itself prints two spaces in a row cannot be
// told apart from Info; BIRD's own formats never do.
func parseProtocolRow(text string) (Protocol, error) {
	var cols [4]string
	rest := text
	for i := range cols {
		rest = strings.TrimLeft(rest, " ")
		word, after, _ := strings.Cut(rest, " ")
		if word == "" {
			return Protocol{}, fmt.Errorf("show protocols: row %q: too few columns", text)
		}
		cols[i], rest = word, after
	}
	rest = strings.TrimLeft(rest, " ")
	since, info, _ := strings.Cut(rest, "  ")
	if since == "" {
		return Protocol{}, fmt.Errorf("show protocols: row %q: no Since column", text)
	}
	return Protocol{
		Name:  cols[0],
		Proto: cols[1],
		Table: cols[2],
		State: cols[3],
		Since: since,
		Info:  strings.TrimSpace(info),
	}, nil
}

// parseProtocolDetail reads one "all" line into p. Protocol-level lines are
// indented by two spaces ("  BGP state: …", "  Channel ipv4"); a channel's
// own lines by four ("    State: UP"). channel is the index of the channel
// being described, -1 for none; the new value is returned.
func parseProtocolDetail(p *Protocol, channel int, text string) int {
	trimmed := strings.TrimLeft(text, " ")
	indent := len(text) - len(trimmed)
	if trimmed == "" {
		return channel
	}
	if indent <= 2 {
		if name, ok := strings.CutPrefix(trimmed, "Channel "); ok {
			p.Channels = append(p.Channels, Channel{Name: strings.TrimSpace(name)})
			return len(p.Channels) - 1
		}
		if v, ok := strings.CutPrefix(trimmed, "BGP state:"); ok {
			p.BGPState = strings.TrimSpace(v)
		}
		return -1
	}
	if channel < 0 {
		return channel
	}
	key, value, ok := strings.Cut(trimmed, ":")
	if !ok {
		return channel
	}
	switch key {
	case "State":
		p.Channels[channel].State = strings.TrimSpace(value)
	case "Table":
		p.Channels[channel].Table = strings.TrimSpace(value)
	}
	return channel
}
