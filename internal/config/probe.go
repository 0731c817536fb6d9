package config

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rhi-daemon/rhi/internal/probespec"
)

// probe reads a VIP's probe mapping: the keys the file sets
// over probespec.Defaults, then probespec.Validate's problems at the line
// of the key concerned. It returns nil when anything is wrong (the parse
// fails anyway).
func (p *parser) probe(n *yaml.Node, path string) *probespec.Spec {
	m, ok := p.mapping(n, path, probespec.Keys...)
	if !ok {
		return nil
	}
	if isNull(n) {
		p.report(n, path, "", issue{msg: "empty: leave the key out for no probe", allowed: "a mapping with at least url"})
		return nil
	}
	s := probespec.Defaults()
	bad := map[string]bool{} // keys already reported
	note := func(key string, stored bool) {
		if m[key] != nil && !stored {
			bad[key] = true
		}
	}
	note("url", set(p, m["url"], path+".url", &s.URL, text))
	note("host", set(p, m["host"], path+".host", &s.Host, text))
	note("timeout", set(p, m["timeout"], path+".timeout", &s.Timeout, parseDuration))
	note("tls_server_name", set(p, m["tls_server_name"], path+".tls_server_name", &s.TLSServerName, text))
	note("insecure_skip_verify", set(p, m["insecure_skip_verify"], path+".insecure_skip_verify", &s.InsecureSkipVerify, parseBool))
	if en := m["expect_status"]; en != nil {
		codes, ok := p.statuses(en, path+".expect_status")
		s.ExpectStatus = codes
		note("expect_status", ok)
	}
	if m["url"] == nil {
		p.report(n, path+".url", "", issue{msg: "required key missing", allowed: "http:// or https:// URL, e.g. http://127.0.0.1:9080/healthz"})
		bad["url"] = true
	}
	errs := probespec.Validate(s)
	for _, e := range errs {
		if bad[e.Key] {
			continue
		}
		at := m[e.Key]
		if at == nil {
			at = n
		} else if e.Index >= 0 && e.Index < len(at.Content) {
			at = at.Content[e.Index]
		}
		p.report(at, path+"."+e.Path(), e.Value, issue{msg: e.Msg, allowed: e.Allowed})
	}
	if len(errs) > 0 || len(bad) > 0 {
		return nil
	}
	return &s
}

// statuses reads expect_status: a list of whole numbers (Validate checks
// their range). ok is false if an item is not a number.
func (p *parser) statuses(n *yaml.Node, path string) (codes []int, ok bool) {
	items, ok := p.list(n, path)
	if !ok {
		return nil, false
	}
	codes = make([]int, 0, len(items))
	for i, it := range items {
		var c int
		if !set(p, it, index(path, i), &c, parseStatus) {
			ok = false
			continue
		}
		codes = append(codes, c)
	}
	return codes, ok
}

func parseStatus(s string) (int, issue) {
	n, err := strconv.Atoi(s)
	if err != nil || strings.HasPrefix(s, "+") {
		return 0, issue{msg: "not an HTTP status", allowed: "100-599"}
	}
	return n, issue{}
}

// parseBool accepts true or false, as written.
func parseBool(s string) (bool, issue) {
	switch s {
	case "true":
		return true, issue{}
	case "false":
		return false, issue{}
	}
	return false, oneOf(s, "true", "false")
}

// probeWarnings lists probespec.Warnings of every VIP's probe, prefixed
// with its key path, for Warnings.
func probeWarnings(c *Config) []string {
	var out []string
	for i := range c.VIPs {
		if c.VIPs[i].Probe == nil {
			continue
		}
		for _, w := range probespec.Warnings(*c.VIPs[i].Probe) {
			out = append(out, fmt.Sprintf("vips[%d].probe.%s: %s (VIP %s)", i, w.Path(), w.Msg, c.VIPs[i].Address.Addr()))
		}
	}
	return out
}
