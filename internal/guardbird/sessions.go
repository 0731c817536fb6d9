package guardbird

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/rhi-daemon/rhi/bird"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
)

// Session is what the guard needs of one BGP protocol whose channel imports
// into a guard table.
type Session struct {
	Name        string
	Table       string // the guard table its channel imports into
	Family      string // "ipv4", "ipv6"
	Established bool   // BGP state Established and the channel UP
	// AddPathRX: ADD-PATH receive negotiated for the family: this side
	// offered RX and the neighbour TX.
	AddPathRX bool
}

// Trust is what "show protocols all" says about the guard tables' sessions.
type Trust struct {
	Sessions []Session
	// bgp names every BGP protocol, for telling BGP routes of a dump apart
	// from this host's own.
	bgp map[string]bool
}

// check says why table's content cannot be trusted as the list of other
// sites, or nil: at least one of its sessions is Established with ADD-PATH
// receive, and no Established one lacks it.
func (t Trust) check(table string) error {
	var good int
	var without []string
	for _, s := range t.Sessions {
		if s.Table != table || !s.Established {
			continue
		}
		if s.AddPathRX {
			good++
		} else {
			without = append(without, s.Name)
		}
	}
	switch {
	case len(without) > 0:
		return fmt.Errorf("%s: session %s is Established without ADD-PATH receive: its neighbour sends only its best path, so other sites can be missing", table, strings.Join(without, ", "))
	case good == 0:
		return fmt.Errorf("%s: no BGP session that imports into it is Established: nothing fills it", table)
	}
	return nil
}

// Sessions reads "show protocols all" (BIRD 2 and BIRD 3): every BGP
// protocol with a channel whose table is a guard table, whether it is
// Established and whether ADD-PATH receive was negotiated for the
// channel's family. A reply it cannot read is an error.
func Sessions(r bird.Reply) (Trust, error) {
	ps, err := bird.ParseProtocolsAll(r)
	if err != nil {
		return Trust{}, fmt.Errorf("%s: %w", protocolsCommand, err)
	}
	caps, err := addPaths(r)
	if err != nil {
		return Trust{}, fmt.Errorf("%s: %w", protocolsCommand, err)
	}
	t := Trust{bgp: map[string]bool{}}
	for _, p := range ps {
		if p.Proto != "BGP" {
			continue
		}
		t.bgp[p.Name] = true
		for _, c := range p.Channels {
			if c.Table != birdconf.GuardTable4 && c.Table != birdconf.GuardTable6 {
				continue
			}
			ap := caps[p.Name]
			t.Sessions = append(t.Sessions, Session{
				Name:        p.Name,
				Table:       c.Table,
				Family:      c.Name,
				Established: p.Established() && c.State == "UP",
				AddPathRX:   slices.Contains(ap.localRX, c.Name) && slices.Contains(ap.neighborTX, c.Name),
			})
		}
	}
	return t, nil
}

// addPath is one protocol's ADD-PATH capabilities: the families this side
// offered to receive and the neighbour offered to send.
type addPath struct {
	localRX, neighborTX []string
}

// addPaths reads the capability lists of "show protocols all", which both
// BIRD 2 and BIRD 3 print under each Established BGP protocol as
//
//	Local capabilities
//	  ...
//	  ADD-PATH
//	    RX: ipv4
//	    TX:
//	Neighbor capabilities
//	  ...
//	  ADD-PATH
//	    RX:
//	    TX: ipv4
//
// (a family list may hold several families). Indentation tells a
// capability's own lines from the next capability.
func addPaths(r bird.Reply) (map[string]addPath, error) {
	out := map[string]addPath{}
	var (
		proto   string
		section string // "local", "neighbor" or ""
		inAP    bool
		apDepth int // indentation of the "ADD-PATH" line
	)
	for _, l := range r.Lines {
		switch l.Code {
		case 1002: // a protocol's row
			name, _, _ := strings.Cut(l.Text, " ")
			proto, section, inAP = name, "", false
			continue
		case 1006:
		default:
			continue
		}
		text := strings.TrimLeft(l.Text, " ")
		depth := len(l.Text) - len(text)
		if text == "" || proto == "" {
			continue
		}
		switch text {
		case "Local capabilities":
			section, inAP = "local", false
			continue
		case "Neighbor capabilities":
			section, inAP = "neighbor", false
			continue
		case "ADD-PATH":
			if section != "" {
				inAP, apDepth = true, depth
			}
			continue
		}
		if !inAP {
			continue
		}
		if depth <= apDepth { // the next capability, or the lists are over
			inAP = false
			continue
		}
		key, value, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("protocol %s: ADD-PATH line %q is not \"RX: …\" or \"TX: …\"", proto, text)
		}
		fams := strings.Fields(value)
		ap := out[proto]
		switch {
		case section == "local" && key == "RX":
			ap.localRX = append(ap.localRX, fams...)
		case section == "neighbor" && key == "TX":
			ap.neighborTX = append(ap.neighborTX, fams...)
		}
		out[proto] = ap
	}
	return out, nil
}

// RouterSiteID reads "show status" ("Router ID is a.b.c.d") and returns the
// router id as a site identity (birdconf.SiteID).
func RouterSiteID(r bird.Reply) (uint32, error) {
	if r.Code != 13 && bird.IsErrorCode(r.Code) {
		return 0, fmt.Errorf("bird error %04d", r.Code)
	}
	for _, l := range r.Lines {
		v, ok := strings.CutPrefix(strings.TrimSpace(l.Text), "Router ID is ")
		if !ok {
			continue
		}
		a, err := netip.ParseAddr(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("router id %q: %w", v, err)
		}
		return birdconf.SiteID(a)
	}
	return 0, errors.New(`no "Router ID is" line`)
}
