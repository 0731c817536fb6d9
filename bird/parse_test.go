package bird

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// frame turns reply text into a Reply through the real framing code.
func frame(t testing.TB, text string) Reply {
	t.Helper()
	r, err := newFrameReader(strings.NewReader(text), DefaultMaxLineBytes, DefaultMaxReplyBytes).readReply()
	if err != nil {
		t.Fatalf("framing %q: %v", text, err)
	}
	return r
}

func TestParseProtocolsRows(t *testing.T) {
	const header = "2002-Name       Proto      Table      State  Since         Info\n"
	tests := []struct {
		name    string
		reply   string
		all     bool
		want    []Protocol
		wantErr string
	}{
		{
			name: "iso long Since with a space",
			reply: header +
				"1002-peer_b     BGP        ---        up     2026-12-02 14:10:34  Established   \n" +
				" peer_b6    BGP        ---        start  2026-12-02 14:10:38  Active        Socket: Connection refused\n0000 \n",
			want: []Protocol{
				{Name: "peer_b", Proto: "BGP", Table: "---", State: "up", Since: "2026-12-02 14:10:34", Info: "Established"},
				{Name: "peer_b6", Proto: "BGP", Table: "---", State: "start", Since: "2026-12-02 14:10:38", Info: "Active        Socket: Connection refused"},
			},
		},
		{
			name: "name longer than its column pushes the others right",
			reply: header +
				"1002-upstream_router_one BGP        ---        up     14:07:38.608  Established   \n0000 \n",
			want: []Protocol{{Name: "upstream_router_one", Proto: "BGP", Table: "---", State: "up", Since: "14:07:38.608", Info: "Established"}},
		},
		{
			name: "iso long in show protocols all, two protocols",
			all:  true,
			reply: header +
				"1002-peer_b     BGP        ---        up     2026-12-02 14:10:34  Established   \n" +
				"1006-  BGP state:          Established\n" +
				"   Channel ipv4\n     State:          UP\n     Table:          master4\n \n" +
				"1002-rhi_direct Direct     ---        up     2026-12-02 14:07:33  \n" +
				"1006-  Channel ipv4\n     State:          UP\n     Table:          master4\n" +
				"   Channel ipv6\n     State:          UP\n     Table:          master6\n \n0000 \n",
			want: []Protocol{
				{Name: "peer_b", Proto: "BGP", Table: "---", State: "up", Since: "2026-12-02 14:10:34", Info: "Established",
					BGPState: "Established", Channels: []Channel{{Name: "ipv4", State: "UP", Table: "master4"}}},
				{Name: "rhi_direct", Proto: "Direct", Table: "---", State: "up", Since: "2026-12-02 14:07:33",
					Channels: []Channel{{Name: "ipv4", State: "UP", Table: "master4"}, {Name: "ipv6", State: "UP", Table: "master6"}}},
			},
		},
		{
			name:  "plain parser ignores detail lines",
			reply: header + "1002-peer_b     BGP        ---        up     14:07:38.608  Established   \n1006-  BGP state:          Established\n0000 \n",
			want:  []Protocol{{Name: "peer_b", Proto: "BGP", Table: "---", State: "up", Since: "14:07:38.608", Info: "Established"}},
		},
		{name: "no protocols", reply: header + "0000 \n", want: nil},
		{name: "no header", reply: "1002-peer_b     BGP        ---        up     14:07:38.608  Established   \n0000 \n", wantErr: "before the header"},
		{name: "header missing entirely", reply: "0000 \n", wantErr: "no header line"},
		{name: "two headers", reply: header + header + "0000 \n", wantErr: "second header"},
		{name: "too few columns", reply: header + "1002-peer_b BGP\n0000 \n", wantErr: "too few columns"},
		{name: "no Since", reply: header + "1002-peer_b BGP --- up\n0000 \n", wantErr: "no Since"},
		{name: "other end code", reply: header + "0013 Daemon is up and running\n", wantErr: "unexpected end code 0013"},
		{name: "error reply", reply: "8003 No protocols match\n", wantErr: "bird error 8003: No protocols match"},
		{name: "details before any protocol", all: true, reply: header + "1006-  BGP state: Down\n0000 \n", wantErr: "before any protocol"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parse := ParseProtocols
			if tc.all {
				parse = ParseProtocolsAll
			}
			got, err := parse(frame(t, tc.reply))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEstablished(t *testing.T) {
	tests := []struct {
		name string
		p    Protocol
		want bool
	}{
		{"BGP state line Established", Protocol{Proto: "BGP", State: "up", BGPState: "Established"}, true},
		{"up but BGP state line says otherwise", Protocol{Proto: "BGP", State: "up", Info: "Established", BGPState: "Idle"}, false},
		{"no BGP state line, Info Established", Protocol{Proto: "BGP", State: "up", Info: "Established"}, true},
		{"Info with a message after the state", Protocol{Proto: "BGP", State: "up", Info: "Established   something"}, true},
		{"start/Active", Protocol{Proto: "BGP", State: "start", Info: "Active        Socket: Connection refused", BGPState: "Active"}, false},
		{"down", Protocol{Proto: "BGP", State: "down", BGPState: "Down"}, false},
		{"not BGP", Protocol{Proto: "Direct", State: "up"}, false},
		{"state not up", Protocol{Proto: "BGP", State: "stop", BGPState: "Established"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Established(); got != tc.want {
				t.Errorf("Established() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseRoutesLines(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		want    []string // routeSummary
		wantErr string
	}{
		{
			name: "second route of a net leaves the net blank",
			reply: "1007-Table master4:\n" +
				" 10.255.0.10/32       unicast [rhi_direct 14:07:47.015] * (240)\n \tdev rhi0\n" +
				"                      unicast [peer_b 14:07:48.000 from 10.99.0.2] (100/20) [AS65002i]\n \tvia 10.99.0.2 on veth0\n0000 \n",
			want: []string{
				"master4 10.255.0.10/32 unicast [rhi_direct 14:07:47.015] * (240)",
				"master4 10.255.0.10/32 unicast [peer_b 14:07:48.000] (100) from=10.99.0.2",
			},
		},
		{
			name:  "sync error mark counts as primary",
			reply: "1007-Table master4:\n 10.0.0.0/8           unreachable [s1 2026-12-02 14:07:47] ! (200)\n0000 \n",
			want:  []string{"master4 10.0.0.0/8 unreachable [s1 2026-12-02 14:07:47] * (200)"},
		},
		{
			name:  "no table header",
			reply: "1007-10.0.0.0/8           unreachable [s1 14:07:47.015] * (200)\n0000 \n",
			want:  []string{" 10.0.0.0/8 unreachable [s1 14:07:47.015] * (200)"},
		},
		{name: "blank net with nothing before", reply: "1007-Table master4:\n                      unicast [p 1] * (1)\n0000 \n", wantErr: "no net before it"},
		{name: "net does not carry into a new table", reply: "1007-Table master4:\n 10.0.0.0/8 unicast [p 1] * (1)\n \n Table master6:\n                      unicast [p 1] * (1)\n0000 \n", wantErr: "no net before it"},
		{name: "not a prefix", reply: "1007-Table master4:\n 2 of 2 routes for 2 networks\n0000 \n", wantErr: "show route: line"},
		{name: "no brackets", reply: "1007-10.0.0.0/8 unicast\n0000 \n", wantErr: "no [protocol time]"},
		{name: "empty protocol", reply: "1007-10.0.0.0/8 unicast [] * (1)\n0000 \n", wantErr: "no protocol name"},
		{name: "bad preference", reply: "1007-10.0.0.0/8 unicast [p 1] * (x)\n0000 \n", wantErr: "preference"},
		{name: "other end code", reply: "0014 Total: 3 of 3 routes\n", wantErr: "unexpected end code 0014"},
		{
			name: "attributes and their continuation lines",
			reply: "1007-Table master4:\n 10.0.0.0/8           unicast [p1 14:07:47.016] * (100) [AS65001i]\n \tvia 10.99.0.1 on veth0\n" +
				"1008-\tType: BGP univ\n1012-\tBGP.origin: IGP\n \tBGP.community: (65000,1) (65000,2)\n \t\t(65000,3)\n0000 \n",
			want: []string{"master4 10.0.0.0/8 unicast [p1 14:07:47.016] * (100) source=BGP"},
		},
		{name: "protocols header", reply: "2002-Name       Proto      Table      State  Since         Info\n0000 \n", wantErr: "line 2002"},
		{name: "protocol row after a route", reply: "1007-10.0.0.0/8 unicast [p 1] * (1)\n1002-p1 BGP --- up 1  Established\n0000 \n", wantErr: "line 1002"},
		{name: "unknown code", reply: "1007-10.0.0.0/8 unicast [p 1] * (1)\n1013-something new\n0000 \n", wantErr: "not part of a route listing"},
		{name: "messages of a command", reply: "0009-peer_b: disabled\n0000 \n", wantErr: "line 0009"},
		{name: "error", reply: "9001 No valid tables\n", wantErr: "bird error 9001"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := ParseRoutes(frame(t, tc.reply))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, rt := range rs {
				got = append(got, routeSummary(rt))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseExportErrors(t *testing.T) {
	ioErr := errors.New("read reply: broken pipe")
	tests := []struct {
		name    string
		reply   Reply
		err     error
		want    ExportState
		wantErr error
	}{
		{name: "socket error", err: ioErr, want: ExportUnknown, wantErr: ioErr},
		{name: "8001 as error", err: &Error{Code: 8001, Text: "Network not found"}, want: NotInTable},
		{name: "8001 without error", reply: Reply{Code: 8001, Lines: []Line{{8001, "Network not found"}}}, want: NotInTable},
		{name: "9001 without error", reply: Reply{Code: 9001, Lines: []Line{{9001, "No valid tables"}}}, want: ExportUnknown, wantErr: &Error{Code: 9001, Text: "No valid tables"}},
		{name: "unparseable listing", reply: Reply{Code: 0, Lines: []Line{{1007, "1 of 2 routes"}, {0, ""}}}, want: ExportUnknown},
		{name: "other end code", reply: Reply{Code: 14, Lines: []Line{{14, "Total"}}}, want: ExportUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseExport(tc.reply, tc.err)
			if got != tc.want {
				t.Errorf("state = %v, want %v", got, tc.want)
			}
			switch {
			case tc.want != ExportUnknown && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tc.want == ExportUnknown && err == nil:
				t.Errorf("err = nil, want an error")
			case tc.wantErr != nil && (err == nil || err.Error() != tc.wantErr.Error()):
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestCommands(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{ExportCommand("peer_b", netip.MustParsePrefix("10.255.0.10/32")), "show route export peer_b.ipv4 10.255.0.10/32"},
		{ExportCommand("peer_b6", netip.MustParsePrefix("fd00:255::10/128")), "show route export peer_b6.ipv6 fd00:255::10/128"},
		{RouteCommand(netip.MustParsePrefix("10.255.0.10/32")), "show route 10.255.0.10/32 all"},
		{RouteCommand(netip.MustParsePrefix("10.255.0.7/24")), "show route 10.255.0.0/24 all"},
		{TableRouteCommand(netip.MustParsePrefix("10.255.0.10/32"), "vip4"), "show route 10.255.0.10/32 table vip4 all"},
		{TableRouteCommand(netip.MustParsePrefix("fd00:255::10/128"), "master6"), "show route fd00:255::10/128 table master6 all"},
		{TableRouteCommand(netip.MustParsePrefix("10.255.0.7/24"), "_t2"), "show route 10.255.0.0/24 table _t2 all"},
		// Quoted in BIRD's config, printed bare by "show protocols all".
		{TableRouteCommand(netip.MustParsePrefix("10.255.0.10/32"), "my-tab.1"), "show route 10.255.0.10/32 table 'my-tab.1' all"},
		{TableRouteCommand(netip.MustParsePrefix("10.255.0.10/32"), "4tab"), "show route 10.255.0.10/32 table '4tab' all"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestExportStateString(t *testing.T) {
	for s, want := range map[ExportState]string{ExportUnknown: "unknown", NotInTable: "not in table", NotExported: "not exported", Exported: "exported"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), want)
		}
	}
}

// Every transcript frames the same when the bytes arrive one at a time, or
// in odd halves, as they can on a socket.
func TestFrameSplitReads(t *testing.T) {
	var files []string
	for _, v := range versions {
		for _, name := range []string{"show-protocols-all-peer_b.up-vip", "show-route-all.up-vip", "show-symbols-peer_b", "socat-pipelined-session.up-vip"} {
			files = append(files, v+"-"+name+".txt")
		}
	}
	for _, f := range files {
		whole := readAll(t, f, func(s string) *frameReader {
			return newFrameReader(strings.NewReader(s), DefaultMaxLineBytes, DefaultMaxReplyBytes)
		})
		for name, wrap := range map[string]func(string) *frameReader{
			"one byte": func(s string) *frameReader {
				return newFrameReader(iotest.OneByteReader(strings.NewReader(s)), DefaultMaxLineBytes, DefaultMaxReplyBytes)
			},
			"half": func(s string) *frameReader {
				return newFrameReader(iotest.HalfReader(strings.NewReader(s)), DefaultMaxLineBytes, DefaultMaxReplyBytes)
			},
			"small buffer": func(s string) *frameReader { // lines still fit, reads do not
				return newFrameReader(iotest.DataErrReader(strings.NewReader(s)), 120, DefaultMaxReplyBytes)
			},
		} {
			t.Run(f+"/"+name, func(t *testing.T) {
				if diff := cmp.Diff(whole, readAll(t, f, wrap)); diff != "" {
					t.Errorf("(-whole +split):\n%s", diff)
				}
			})
		}
	}
}

func readAll(t *testing.T, file string, open func(string) *frameReader) []Reply {
	t.Helper()
	data := readFile(t, file)
	fr := open(data)
	var out []Reply
	for {
		r, err := fr.readReply()
		if errors.Is(err, errEOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
}

func TestFrameErrors(t *testing.T) {
	tests := []struct {
		name    string
		stream  string
		maxLine int
		maxRep  int
		want    error // errors.Is
	}{
		{name: "garbage line", stream: "hello\n", want: ErrFraming},
		{name: "empty line", stream: "\n", want: ErrFraming},
		{name: "three digits", stream: "100 x\n", want: ErrFraming},
		{name: "code without separator", stream: "0000\n", want: ErrFraming},
		{name: "code with a tab", stream: "0000\t\n", want: ErrFraming},
		{name: "continuation first", stream: " Table master4:\n0000 \n", want: ErrFraming},
		{name: "continuation after async only", stream: "+log line\n more\n0000 \n", want: ErrFraming},
		{name: "garbage after lines", stream: "1007-Table master4:\nSSH-2.0-OpenSSH\n", want: ErrFraming},
		{name: "closed inside the reply", stream: "1007-Table master4:\n", want: errUnexpectedEOF},
		{name: "closed inside a line", stream: "1007-Table mas", want: errUnexpectedEOF},
		{name: "closed inside the end line", stream: "0000", want: errUnexpectedEOF},
		{name: "closed before anything", stream: "", want: errEOF},
		{name: "line too long", stream: "1007-" + strings.Repeat("x", 100) + "\n0000 \n", maxLine: 64, want: ErrTooLarge},
		{name: "reply too large", stream: strings.Repeat("1007-"+strings.Repeat("x", 50)+"\n", 30) + "0000 \n", maxRep: 1024, want: ErrTooLarge},
		{name: "async lines count towards the bound", stream: strings.Repeat("+"+strings.Repeat("x", 50)+"\n", 30) + "0000 \n", maxRep: 1024, want: ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			maxLine, maxRep := tc.maxLine, tc.maxRep
			if maxLine == 0 {
				maxLine = DefaultMaxLineBytes
			}
			if maxRep == 0 {
				maxRep = DefaultMaxReplyBytes
			}
			_, err := newFrameReader(strings.NewReader(tc.stream), maxLine, maxRep).readReply()
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestFrameAsyncAndCodes(t *testing.T) {
	stream := "+0021 log message\n1007-Table master4:\n+another\n 10.0.0.0/8 unreachable [s 1] * (1)\n1008-\tType: static univ\n0000 \n" +
		" stray continuation\n"
	fr := newFrameReader(strings.NewReader(stream), DefaultMaxLineBytes, DefaultMaxReplyBytes)
	r, err := fr.readReply()
	if err != nil {
		t.Fatal(err)
	}
	want := Reply{
		Lines: []Line{{1007, "Table master4:"}, {1007, "10.0.0.0/8 unreachable [s 1] * (1)"}, {1008, "\tType: static univ"}, {0, ""}},
		Code:  0,
		Async: []string{"0021 log message", "another"},
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A continuation line cannot borrow the code of the previous reply.
	if _, err := fr.readReply(); !errors.Is(err, ErrFraming) {
		t.Errorf("second reply: err = %v, want ErrFraming", err)
	}
}
