package lab

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"text/template"

	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
)

const (
	peerASN   = 65000
	maxDCs    = 200
	vipIface  = "rhi0"
	peerIface = "peer" // the ADC's end of its link to the router
)

// session is one BGP session as the host file declares it.
type session struct {
	Name       string // BIRD protocol name
	Template   string // template in the shared file
	Local      netip.Addr
	LocalASN   uint32
	Neighbor   netip.Addr
	NeighborAS uint32
	Host       string // lab host at the other end
	Extra      string // more lines inside the session, or ""
}

// plan lays out the lab's hosts for l.opts: names, addresses, paths and
// sessions. It does no I/O.
func plan(l *Lab) {
	dcs := l.opts.DCs
	ns := func(host string) string { return l.Name + "-" + host }
	newRouter := func(host string, asn uint32, id netip.Addr) *Router {
		dir := filepath.Join(l.Dir, host)
		return &Router{
			Name:       host,
			NS:         ns(host),
			Dir:        dir,
			BirdConfig: filepath.Join(dir, "bird.conf"),
			BirdSocket: filepath.Join(dir, "bird.ctl"),
			BirdLog:    filepath.Join(dir, "bird.log"),
			ASN:        asn,
			RouterID:   id,
			lab:        l,
		}
	}
	l.Peer = newRouter("peer", peerASN, netip.AddrFrom4([4]byte{10, 99, 0, 1}))
	for i := 1; i <= dcs; i++ {
		host := fmt.Sprintf("dc%d", i)
		n := byte(i)
		d := &DC{
			Iface:      vipIface,
			PeerIface:  host,
			ADCIface:   peerIface,
			ADCAddr4:   netip.AddrFrom4([4]byte{10, 99, n, 2}),
			PeerAddr4:  netip.AddrFrom4([4]byte{10, 99, n, 1}),
			ADCAddr6:   netip.AddrFrom16([16]byte{0xfd, 0x00, 0x00, 0x99, 0x00, n, 15: 2}),
			PeerAddr6:  netip.AddrFrom16([16]byte{0xfd, 0x00, 0x00, 0x99, 0x00, n, 15: 1}),
			Protocols:  []string{"peer_4", "peer_6"},
			PeerProtos: []string{host + "_4", host + "_6"},
		}
		asn := peerASN + uint32(i)
		if l.opts.ADCAS != 0 {
			asn = l.opts.ADCAS
		}
		d.Router = newRouter(host, asn, d.ADCAddr4)
		d.includes = []string{"base.conf", "adc.conf"}
		if l.opts.Tiers != nil {
			d.includes = []string{"base.conf", "tiers.conf"}
			def := *l.opts.Tiers
			def.AS = asn
			def.SiteID, _ = birdconf.SiteID(d.ADCAddr4) // never 0: 10.99.n.2
			d.defines = def.String()
		}
		t4, t6 := "rhi_peer4", "rhi_peer6"
		if l.opts.Tiers != nil && asn == peerASN {
			t4, t6 = "rhi_ibgp4", "rhi_ibgp6" // tiers.conf's iBGP templates
		}
		d.sessions = []session{
			{Name: d.Protocols[0], Template: t4, Local: d.ADCAddr4, LocalASN: d.ASN, Neighbor: d.PeerAddr4, NeighborAS: peerASN, Host: "peer", Extra: l.opts.ADCSession},
			{Name: d.Protocols[1], Template: t6, Local: d.ADCAddr6, LocalASN: d.ASN, Neighbor: d.PeerAddr6, NeighborAS: peerASN, Host: "peer", Extra: l.opts.ADCSession},
		}
		l.Peer.sessions = append(l.Peer.sessions,
			session{Name: d.PeerProtos[0], Template: "rhi_adc4", Local: d.PeerAddr4, LocalASN: peerASN, Neighbor: d.ADCAddr4, NeighborAS: d.ASN, Host: host, Extra: l.opts.PeerSession},
			session{Name: d.PeerProtos[1], Template: "rhi_adc6", Local: d.PeerAddr6, LocalASN: peerASN, Neighbor: d.ADCAddr6, NeighborAS: d.ASN, Host: host, Extra: l.opts.PeerSession},
		)
		l.DCs = append(l.DCs, d)
	}
	l.Peer.includes = []string{"peer.conf"}
}

// hostConf is the host file around the shared configuration. The timers are
// the lab's: sessions come up a second after BIRD starts and a dead
// neighbour is noticed within 6 s.
var hostConf = template.Must(template.New("host").Parse(`# netns lab {{.Lab}}, host {{.Host}}: generated, do not edit.
log "{{.Log}}" all;
router id {{.RouterID}};
{{.Defines}}
{{range .Includes}}include "{{.}}";
{{end}}{{range .Sessions}}
protocol bgp {{.Name}} from {{.Template}} {
  local {{.Local}} as {{.LocalASN}};
  neighbor {{.Neighbor}} as {{.NeighborAS}};
  connect delay time 1;
  connect retry time 1;
  error wait time 1, 5;
  hold time 6;
  keepalive time 2;
{{- if .Extra}}
  {{.Extra}}
{{- end}}
}
{{end}}`))

// writeConfigs writes the shared files into the lab directory and a host file
// for every router.
func writeConfigs(l *Lab) error {
	shared := filepath.Join(l.Dir, "bird")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		return err
	}
	adc, base, peer := birdconf.ADC(), birdconf.Base(), birdconf.Peer()
	if l.opts.ADCConfig != "" {
		adc = l.opts.ADCConfig
	}
	if l.opts.BaseConfig != "" {
		base = l.opts.BaseConfig
	}
	if l.opts.PeerConfig != "" {
		peer = l.opts.PeerConfig
	}
	files := map[string]string{"adc.conf": adc, "base.conf": base, "peer.conf": peer, "tiers.conf": birdconf.Tiers()}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(shared, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	for _, r := range l.routers() {
		if err := os.MkdirAll(r.Dir, 0o755); err != nil {
			return err
		}
		var includes []string
		for _, name := range r.includes {
			includes = append(includes, filepath.Join(shared, name))
		}
		var b bytes.Buffer
		err := hostConf.Execute(&b, map[string]any{
			"Lab":      l.Name,
			"Host":     r.Name,
			"Log":      r.BirdLog,
			"RouterID": r.RouterID,
			"Defines":  r.defines,
			"Includes": includes,
			"Sessions": r.sessions,
		})
		if err != nil {
			return fmt.Errorf("render %q: %w", r.BirdConfig, err)
		}
		if err := os.WriteFile(r.BirdConfig, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
