package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/safefile"
	"gopkg.in/yaml.v3"
)

// Default returns the configuration used for every key a file leaves out.
// It has no VIPs.
func Default() Config {
	return Config{
		PollInterval: 3 * time.Second,
		ControlURL:   "http://127.0.0.1:9090",
		Timeout:      5 * time.Second,
		PollMode:     PollAuto,
		// Measured against the fake APISIX with its cost model
		// (BENCHMARKS.md, "Polling cost and fast polls").
		FastPollInterval: DefaultFastPollInterval,
		PollBudget:       DefaultPollBudget,
		Interface:        "rhi0",
		LogFormat:        LogText,
		FailurePolicy: FailurePolicy{
			ControlAPIUnreachable: Withdraw,
			MaxFailedPolls:        3,
			NoChecker:             CountHealthy,
		},
		Bird: Bird{
			Socket:  "/run/bird/bird.ctl",
			Timeout: 2 * time.Second,
		},
		Rise:          1,
		Fall:          1,
		OnShutdown:    ShutdownKeep,
		StatusListen:  "127.0.0.1:9711",
		DrainFile:     "/var/lib/rhi/drain",
		DrainGrace:    DefaultDrainGrace,
		StateFile:     "/var/lib/rhi/owned",
		Unmanaged:     UnmanagedReport,
		ControlSocket: "/run/rhi/rhi.sock",
		Degraded:      Degraded{Interface: DefaultDegradedInterface},
		LastResort:    LastResort{Interface: DefaultLastResortInterface},
		FailOpen:      defaultFailOpen(),
	}
}

// maxFileSize bounds what Load reads. A VIP takes about 120 bytes, so this
// leaves room for some hundred thousand of them.
const maxFileSize = 16 << 20

// Load reads and parses the configuration file at path. Problems in the
// file are returned as [Errors] naming path as given; failing to read it is
// a plain wrapped error. The file is opened without blocking and must be a
// regular file: a FIFO or a device at path is an error at once, not a
// reload that waits for ever. (A symbolic link is followed: /etc/rhi is
// root's, and linking the config from elsewhere is a common choice.)
func Load(path string, keys KeyRule) (*Config, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, keys)
}

// readFile reads the regular file at path, or what a symbolic link there
// points to, at most maxFileSize bytes.
func readFile(path string) ([]byte, error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("read config %q: %w", path, err)
	}
	data, _, err := safefile.Read(target, maxFileSize)
	switch {
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("read config %q: larger than %d MiB", path, maxFileSize>>20)
	case err != nil:
		return nil, fmt.Errorf("read config %q: %w", path, err)
	}
	return data, nil
}

// Parse reads a configuration from data; name is used in messages. On
// failure the error is of type [Errors] and lists every problem found.
//
// An empty document yields [Default]. A config without VIPs (no vips key,
// or an empty list) is valid: rhi then owns no addresses, which is a
// sensible state for a host being set up or drained.
//
// Every VIP's Rise and Fall hold the effective value: the VIP's own if it
// sets one, else the global one. Addresses are stored as /32 or /128, the
// control URL without trailing slashes, an empty bird.protocols as nil.
// Upstream keys are checked by keys, the health source's rule (KeyRule).
func Parse(name string, data []byte, keys KeyRule) (*Config, error) {
	p := &parser{file: name, keys: keys}
	c := Default()
	if root := p.document(data); root != nil {
		p.config(root, &c)
	}
	if len(p.errs) > 0 {
		sort.SliceStable(p.errs, func(i, j int) bool { return p.errs[i].Line < p.errs[j].Line })
		return nil, p.errs
	}
	c.notes = p.notes
	c.keys = keys
	return &c, nil
}

// parser walks the yaml.Node tree by hand rather than unmarshalling into
// structs: that way every problem knows its line and path, unknown and
// duplicate keys are caught, and all problems are collected, not just the
// first.
type parser struct {
	file  string
	keys  KeyRule
	errs  Errors
	notes []string // warnings that name a line; Parse hands them to Config
}

// report records a problem at node n (the line of n). got is the value as
// written, "" if there is none to show.
func (p *parser) report(n *yaml.Node, path, got string, is issue) {
	p.errs = append(p.errs, Problem{File: p.file, Line: n.Line, Path: path, Msg: is.msg, Got: got, Allowed: is.allowed})
}

// document parses the YAML text and returns its top-level mapping, or nil
// when there is nothing to read (empty file, only comments, a bare null)
// or the text is broken.
func (p *parser) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) {
			p.syntax(data, err)
		}
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		p.syntax(data, err)
		return nil
	default:
		p.report(&next, "", "", issue{msg: "more than one YAML document"})
		return nil
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	switch {
	case isNull(root):
		return nil
	case root.Kind != yaml.MappingNode:
		p.report(root, "", "", issue{msg: "top level must be a mapping, not " + kindName(root)})
		return nil
	}
	return root
}

// syntax records a YAML syntax error with the best line we can give.
// yaml.v3 writes "line N: " into the message, but counts inconsistently:
// parser errors give a 0-based line, scanner errors a 1-based one, both
// leave the line out when it would be 0, and errors in the encoding carry
// none at all. The message sets below are those of yaml.v3 v3.0.1.
func (p *parser) syntax(data []byte, err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	switch {
	case yamlParserErrors[msg]:
		line++
	case yamlReaderErrors[msg]:
		line = badCharLine(data)
	case line == 0:
		line = 1
	}
	p.errs = append(p.errs, Problem{File: p.file, Line: line, Msg: "invalid YAML: " + msg})
}

var (
	yamlLineRE       = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlParserErrors = map[string]bool{
		"did not find expected <stream-start>":   true,
		"did not find expected <document start>": true,
		"did not find expected node content":     true,
		"did not find expected key":              true,
		"did not find expected '-' indicator":    true,
		"did not find expected ',' or ']'":       true,
		"did not find expected ',' or '}'":       true,
		"found undefined tag handle":             true,
		"found duplicate %YAML directive":        true,
		"found incompatible YAML document":       true,
		"found duplicate %TAG directive":         true,
	}
	yamlReaderErrors = map[string]bool{
		"control characters are not allowed": true,
		"invalid leading UTF-8 octet":        true,
		"invalid trailing UTF-8 octet":       true,
		"incomplete UTF-8 octet sequence":    true,
		"invalid length of a UTF-8 sequence": true,
		"invalid Unicode character":          true,
	}
)

// badCharLine returns the line of the first byte that is not valid UTF-8 or
// is a character YAML forbids, or 0 if there is none.
func badCharLine(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if (r == utf8.RuneError && size == 1) || !yamlPrintable(r) {
			return 1 + bytes.Count(data[:i], []byte("\n"))
		}
		i += size
	}
	return 0
}

// yamlPrintable is YAML 1.1's set of allowed characters.
func yamlPrintable(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r <= 0x7E) || r == 0x85 ||
		(r >= 0xA0 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	default:
		return "a single value"
	}
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// alias refuses YAML aliases. Following them would need a budget against
// alias bombs, and a config of this size gains little from them.
func (p *parser) alias(n *yaml.Node, path string) bool {
	if n.Kind != yaml.AliasNode {
		return false
	}
	p.report(n, path, "*"+n.Value, issue{msg: "aliases are not supported"})
	return true
}

// mapping checks that n is a mapping whose keys are unique and all in
// keys, and returns the value node of each key present. A null n (the key
// was written without a value) is an empty mapping. ok is false if n is
// not a mapping at all.
func (p *parser) mapping(n *yaml.Node, path string, keys ...string) (m map[string]*yaml.Node, ok bool) {
	if isNull(n) {
		return nil, true
	}
	if p.alias(n, path) {
		return nil, false
	}
	if n.Kind != yaml.MappingNode {
		p.report(n, path, "", issue{msg: "must be a mapping, not " + kindName(n)})
		return nil, false
	}
	m = make(map[string]*yaml.Node, len(n.Content)/2)
	firstLine := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.report(k, join(path, "?"), "", issue{msg: "key must be a plain string, not " + kindName(k)})
			continue
		}
		kpath := join(path, keyName(k.Value))
		if l, dup := firstLine[k.Value]; dup {
			p.report(k, kpath, "", issue{msg: "duplicate key, first at line " + strconv.Itoa(l)})
			continue
		}
		firstLine[k.Value] = k.Line
		if !contains(keys, k.Value) {
			p.report(k, kpath, "", issue{msg: "unknown key", allowed: strings.Join(keys, ", ")})
			continue
		}
		m[k.Value] = v
	}
	return m, true
}

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// keyName shows a key in a path: as is if it is a plain word, else quoted,
// so that an odd or empty key still gives a readable, non-empty path.
func keyName(k string) string {
	if plainKeyRE.MatchString(k) {
		return k
	}
	return strconv.Quote(k)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scalar returns the text of a single value. A null (a key written without
// a value) reads as "", which each check then accepts or refuses.
func (p *parser) scalar(n *yaml.Node, path string) (string, bool) {
	if p.alias(n, path) {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		p.report(n, path, "", issue{msg: "must be a single value, not " + kindName(n)})
		return "", false
	}
	if isNull(n) {
		return "", true
	}
	return n.Value, true
}

// list returns the items of a list. A null is an empty list.
func (p *parser) list(n *yaml.Node, path string) ([]*yaml.Node, bool) {
	if isNull(n) {
		return nil, true
	}
	if p.alias(n, path) {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		p.report(n, path, "", issue{msg: "must be a list, not " + kindName(n)})
		return nil, false
	}
	return n.Content, true
}

// set reads the value of n into *dst with parse. It leaves *dst alone (the
// default) when n is nil, i.e. the key is absent, and when the value is bad:
// the problem is recorded and the whole parse fails anyway. It reports
// whether it stored a value.
func set[T any](p *parser, n *yaml.Node, path string, dst *T, parse func(string) (T, issue)) bool {
	if n == nil {
		return false
	}
	s, ok := p.scalar(n, path)
	if !ok {
		return false
	}
	v, is := parse(s)
	if !is.ok() {
		got := s
		if is.shown != "" {
			got = is.shown
		}
		p.report(n, path, got, is)
		return false
	}
	*dst = v
	if d, ok := any(v).(time.Duration); ok {
		p.bareSeconds(n, path, s, d)
	}
	return true
}

// text accepts any string.
func text(s string) (string, issue) { return s, issue{} }

// checked turns a check into a parse that keeps the string as written.
func checked(check func(string) issue) func(string) (string, issue) {
	return func(s string) (string, issue) { return s, check(s) }
}

// enum accepts exactly one of the allowed words.
func enum[T ~string](allowed ...T) func(string) (T, issue) {
	words := make([]string, len(allowed))
	for i, a := range allowed {
		words[i] = string(a)
	}
	return func(s string) (T, issue) { return T(s), oneOf(s, words...) }
}

var (
	topKeys = []string{
		"apisix_poll_interval", "apisix_control_url", "apisix_timeout", "apisix_poll_mode", "fast_poll_interval", "apisix_poll_budget", "interface",
		"main_log", "error_log", "log_format", "failure_policy", "bird", "rise", "fall",
		"on_shutdown", "status_listen", "control_socket", "drain_file", "state_file", "unmanaged_addresses", "fail_open", "vips",
		"degraded", "last_resort", "site_id", "drain_grace",
	}
	policyKeys = []string{"control_api_unreachable", "max_failed_polls", "no_checker"}
	birdKeys   = []string{"socket", "protocols", "timeout"}
	vipKeys    = []string{"address", "description", "upstreams", "condition", "rise", "fall", "min_healthy", "probe", "degraded", "drain_grace"}
)

func (p *parser) config(root *yaml.Node, c *Config) {
	m, _ := p.mapping(root, "", topKeys...)
	if set(p, m["apisix_poll_interval"], "apisix_poll_interval", &c.PollInterval, parsePollInterval) {
		p.slowPoll(m["apisix_poll_interval"], c.PollInterval)
	}
	set(p, m["apisix_control_url"], "apisix_control_url", &c.ControlURL, checkURL)
	set(p, m["apisix_timeout"], "apisix_timeout", &c.Timeout, parseDuration)
	set(p, m["apisix_poll_mode"], "apisix_poll_mode", &c.PollMode, enum(PollPerUpstream, PollList, PollAuto))
	set(p, m["fast_poll_interval"], "fast_poll_interval", &c.FastPollInterval, parseFastPollInterval)
	set(p, m["apisix_poll_budget"], "apisix_poll_budget", &c.PollBudget, parseBudget)
	set(p, m["interface"], "interface", &c.Interface, checked(checkIfname))
	set(p, m["main_log"], "main_log", &c.MainLog, checked(checkLogPath))
	set(p, m["error_log"], "error_log", &c.ErrorLog, checked(checkLogPath))
	set(p, m["log_format"], "log_format", &c.LogFormat, enum(LogText, LogJSON))
	if n := m["failure_policy"]; n != nil {
		p.failurePolicy(n, &c.FailurePolicy)
	}
	if n := m["bird"]; n != nil {
		p.bird(n, &c.Bird)
	}
	set(p, m["rise"], "rise", &c.Rise, parseCount)
	set(p, m["fall"], "fall", &c.Fall, parseCount)
	set(p, m["on_shutdown"], "on_shutdown", &c.OnShutdown, enum(ShutdownKeep, ShutdownWithdraw))
	set(p, m["status_listen"], "status_listen", &c.StatusListen, checked(checkListen))
	set(p, m["control_socket"], "control_socket", &c.ControlSocket, checked(checkControlSocket))
	set(p, m["drain_file"], "drain_file", &c.DrainFile, checked(checkFilePath))
	set(p, m["drain_grace"], "drain_grace", &c.DrainGrace, parseDrainGrace)
	set(p, m["state_file"], "state_file", &c.StateFile, checked(checkFilePath))
	p.collisions(m, c)
	set(p, m["unmanaged_addresses"], "unmanaged_addresses", &c.Unmanaged, enum(UnmanagedReport, UnmanagedWithdraw))
	if n := m["degraded"]; n != nil {
		p.degradedGlobal(n, c)
	}
	if n := m["last_resort"]; n != nil {
		p.lastResort(n, c)
	}
	set(p, m["site_id"], "site_id", &c.SiteID, parseSiteID)
	if n := m["fail_open"]; n != nil {
		p.failOpen(n, c)
	}
	if n := m["vips"]; n != nil {
		p.vips(n, c)
	}
	p.degradedClash(m, c)
	p.lastResortClash(m, c)
}

// collisions refuses two of rhi's files at one path: the record and the
// drain file are replaced by a rename, the logs appended to, the control
// socket bound, and the locks flocked beside the record and the drain
// file; any two sharing a path break both (a record renamed over a log).
// main_log and error_log may share one: that file gets each line once.
// The problem is reported at the key set in the file (the later one when
// both are).
func (p *parser) collisions(m map[string]*yaml.Node, c *Config) {
	files := []struct{ key, name, path string }{
		{"main_log", "main_log", c.MainLog}, {"error_log", "error_log", c.ErrorLog},
		{"drain_file", "drain_file", c.DrainFile}, {"state_file", "state_file", c.StateFile},
		{"control_socket", "control_socket", c.ControlSocket},
		{"drain_file", "the lock beside drain_file", lockOf(c.DrainFile)},
		{"state_file", "the lock beside state_file", lockOf(c.StateFile)},
	}
	for i, a := range files {
		for _, b := range files[i+1:] { // two locks collide only when their files do
			if a.path == "" || a.key == b.key || filepath.Clean(a.path) != filepath.Clean(b.path) ||
				(a.key == "main_log" && b.key == "error_log") || (a.name != a.key && b.name != b.key) {
				continue
			}
			at, other := b, a
			if m[at.key] == nil || b.name != b.key { // a lock is reported at the file that hits it
				at, other = a, b
			}
			if n := m[at.key]; n != nil {
				p.report(n, at.key, at.path, issue{msg: "same file as " + other.name + ": each needs its own"})
			}
		}
	}
}

// lockOf is the lock file beside path ("" for none).
func lockOf(path string) string {
	if path == "" {
		return ""
	}
	return path + ".lock"
}

func (p *parser) failurePolicy(n *yaml.Node, fp *FailurePolicy) {
	const path = "failure_policy"
	m, _ := p.mapping(n, path, policyKeys...)
	set(p, m["control_api_unreachable"], path+".control_api_unreachable", &fp.ControlAPIUnreachable, enum(Withdraw, Announce))
	set(p, m["max_failed_polls"], path+".max_failed_polls", &fp.MaxFailedPolls, parseCount)
	set(p, m["no_checker"], path+".no_checker", &fp.NoChecker, enum(CountHealthy, CountUnhealthy))
}

func (p *parser) bird(n *yaml.Node, b *Bird) {
	const path = "bird"
	m, _ := p.mapping(n, path, birdKeys...)
	set(p, m["socket"], path+".socket", &b.Socket, checked(checkSocket))
	set(p, m["timeout"], path+".timeout", &b.Timeout, parseDuration)
	pn := m["protocols"]
	if pn == nil {
		return
	}
	items, _ := p.list(pn, path+".protocols")
	seen := make(map[string]int, len(items))
	for i, it := range items {
		ipath := index(path+".protocols", i)
		var name string
		if !set(p, it, ipath, &name, checked(checkProtocol)) {
			continue
		}
		if l, dup := seen[name]; dup {
			p.report(it, ipath, name, issue{msg: "duplicate protocol, first at line " + strconv.Itoa(l)})
			continue
		}
		seen[name] = it.Line
		b.Protocols = append(b.Protocols, name)
	}
}

func (p *parser) vips(n *yaml.Node, c *Config) {
	items, _ := p.list(n, "vips")
	if len(items) == 0 {
		return
	}
	c.VIPs = make([]VIP, 0, len(items))
	type seenAt struct {
		line int
		path string
	}
	seen := make(map[netip.Prefix]seenAt, len(items))
	for i, it := range items {
		path := index("vips", i)
		v, ok := p.vip(it, path, c)
		if !ok {
			continue
		}
		if first, dup := seen[v.Address]; dup {
			an := addressNode(it)
			p.report(an, path+".address", an.Value, issue{msg: fmt.Sprintf("same address as %s at line %d", first.path, first.line)})
			continue
		}
		seen[v.Address] = seenAt{addressNode(it).Line, path}
		c.VIPs = append(c.VIPs, v)
	}
}

// addressNode finds the value node of a VIP mapping's address key, which
// vip has already checked exists.
func addressNode(vip *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(vip.Content); i += 2 {
		if vip.Content[i].Value == "address" {
			return vip.Content[i+1]
		}
	}
	return vip
}

// vip reads one VIP. ok is false if its address could not be read, so
// that the caller does not check a bad address for duplicates.
func (p *parser) vip(n *yaml.Node, path string, c *Config) (v VIP, ok bool) {
	m, isMap := p.mapping(n, path, vipKeys...)
	if !isMap {
		return VIP{}, false
	}
	if isNull(n) {
		p.report(n, path, "", issue{msg: "empty list item, expected a VIP"})
		return VIP{}, false
	}
	v = VIP{Condition: All, Rise: c.Rise, Fall: c.Fall, Degraded: Degraded{Below: c.Degraded.Below}, DrainGrace: c.DrainGrace}
	if m["address"] == nil {
		p.report(n, path+".address", "", issue{msg: "required key missing"})
	}
	ok = set(p, m["address"], path+".address", &v.Address, parseAddress)
	set(p, m["description"], path+".description", &v.Description, text)
	var minHealthy health.MinHealthy // the default of the VIP's upstreams
	set(p, m["min_healthy"], path+".min_healthy", &minHealthy, parseMinHealthy)
	v.Upstreams = p.upstreams(n, m["upstreams"], path+".upstreams", minHealthy)
	set(p, m["condition"], path+".condition", &v.Condition, enum(All, Any))
	set(p, m["rise"], path+".rise", &v.Rise, parseCount)
	set(p, m["fall"], path+".fall", &v.Fall, parseCount)
	set(p, m["drain_grace"], path+".drain_grace", &v.DrainGrace, parseDrainGrace)
	if pn := m["probe"]; pn != nil {
		v.Probe = p.probe(pn, path+".probe")
	}
	if dn := m["degraded"]; dn != nil {
		p.degradedVIP(dn, path, c, &v)
	}
	return v, ok
}

// upstreams reads a VIP's upstream list: required, non-empty, every key
// valid, no resource named twice (also not under two etcd prefixes, which
// would be the same health checker).
func (p *parser) upstreams(vipNode, n *yaml.Node, path string, minHealthy health.MinHealthy) []health.Upstream {
	if n == nil {
		p.report(vipNode, path, "", issue{msg: "required key missing"})
		return nil
	}
	items, ok := p.list(n, path)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		p.report(n, path, "", issue{msg: "must list at least one upstream"})
		return nil
	}
	ups := make([]health.Upstream, 0, len(items))
	seen := make(map[string]int, len(items)) // line by resource
	for i, it := range items {
		ipath := index(path, i)
		s, keyNode, mh, ok := p.upstreamItem(it, ipath)
		if !ok {
			continue
		}
		if keyNode != it {
			ipath += ".key"
		}
		u, res, is := parseUpstream(s, p.keys)
		if !is.ok() {
			p.report(keyNode, ipath, s, is)
			continue
		}
		u.MinHealthy = cmp.Or(mh, minHealthy)
		if l, dup := seen[res]; dup {
			p.report(keyNode, ipath, s, issue{msg: "same upstream as line " + strconv.Itoa(l)})
			continue
		}
		seen[res] = keyNode.Line
		ups = append(ups, u)
	}
	return ups
}
