package config

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"
)

// configDoc is the configuration reference that operators read.
const configDoc = "../../docs/configuration.md"

// docKeys reads the key table of the reference: for each row whose first
// cell is a `key.path`, its cells.
func docKeys(t *testing.T) (rows map[string][]string, text string) {
	t.Helper()
	b, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatalf("read the configuration reference: %v", err)
	}
	rows = map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 7 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = cells[1 : len(cells)-1]
	}
	return rows, string(b)
}

// leafKeys walks the yaml tags of Config: every key that holds a value, as
// a path ("bird.socket", "vips[].address"). Sections (a struct, a list of
// structs) are walked into; durations and prefixes are values.
func leafKeys(typ reflect.Type, prefix string) []string {
	var keys []string
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		path := prefix + tag
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Struct && !isValue(ft):
			keys = append(keys, leafKeys(ft, path+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && !isValue(ft.Elem()):
			keys = append(keys, leafKeys(ft.Elem(), path+"[].")...)
		default:
			keys = append(keys, path)
		}
	}
	return keys
}

func isValue(t reflect.Type) bool {
	return t == reflect.TypeOf(time.Duration(0)) || t == reflect.TypeOf(netip.Prefix{})
}

// TestConfigKeysDocumented fails when a key of Config, or a key the parser
// accepts, has no row in docs/configuration.md.
func TestConfigKeysDocumented(t *testing.T) {
	rows, _ := docKeys(t)
	leaves := leafKeys(reflect.TypeOf(Config{}), "")
	if len(leaves) < 20 {
		t.Fatalf("found only %d keys in Config; the walk no longer sees its tags: %v", len(leaves), leaves)
	}
	accepted := append([]string(nil), topKeys...)
	for _, k := range policyKeys {
		accepted = append(accepted, "failure_policy."+k)
	}
	for _, k := range birdKeys {
		accepted = append(accepted, "bird."+k)
	}
	for _, k := range vipKeys {
		accepted = append(accepted, "vips[]."+k)
	}
	seen := map[string]bool{}
	for _, k := range append(leaves, accepted...) {
		if seen[k] {
			continue
		}
		seen[k] = true
		if _, ok := rows[k]; !ok {
			t.Errorf("config key %s has no row in %s", k, configDoc)
		}
	}
}

// TestConfigDefaultsDocumented fails when a default in the reference is not
// the one Default gives, as check-config prints it.
func TestConfigDefaultsDocumented(t *testing.T) {
	rows, _ := docKeys(t)
	d := Default()
	out, err := Format(&d)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := yaml.Unmarshal(out, &tree); err != nil {
		t.Fatalf("read Format's output: %v", err)
	}
	defaults := map[string]string{}
	flatten(tree, "", defaults)
	keys := make([]string, 0, len(defaults))
	for k := range defaults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := defaults[k]
		row, ok := rows[k]
		if !ok {
			continue // TestConfigKeysDocumented reports it
		}
		cell := row[2]
		if v == "" {
			if !strings.Contains(cell, "empty") {
				t.Errorf("%s: the default is empty, the reference says %q", k, strings.TrimSpace(cell))
			}
			continue
		}
		if !strings.Contains(cell, "`"+v+"`") {
			t.Errorf("%s: the default is %q, the reference says %q", k, v, strings.TrimSpace(cell))
		}
	}
	if len(keys) < 15 {
		t.Errorf("only %d defaults read from Format: %v", len(keys), keys)
	}
}

func flatten(m map[string]any, prefix string, out map[string]string) {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			flatten(v, prefix+k+".", out)
		case []any:
			if len(v) == 0 {
				out[prefix+k] = "[]"
			}
		case nil:
			out[prefix+k] = ""
		default:
			out[prefix+k] = fmt.Sprint(v)
		}
	}
}

// TestConfigDocExample: the example in the reference is a valid config.
func TestConfigDocExample(t *testing.T) {
	_, text := docKeys(t)
	_, after, ok := strings.Cut(text, "## Example\n\n```yaml\n")
	if !ok {
		t.Fatalf("%s has no YAML example under ## Example", configDoc)
	}
	example, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatalf("%s: the example is not closed", configDoc)
	}
	c, err := Parse("docs/configuration.md example", []byte(example), apisixKeys)
	if err != nil {
		t.Fatalf("the example does not parse:\n%v", err)
	}
	if len(c.VIPs) == 0 {
		t.Errorf("the example has no VIPs")
	}
}

// mdLink is a Markdown inline link: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksStayInRepository: README.md and docs/*.md link only to files
// of the repository that exist (the package ships them together), and
// every #anchor names a heading of its file.
func TestDocLinksStayInRepository(t *testing.T) {
	root := "../.."
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(files) < 4 {
		t.Fatalf("docs/*.md: %v %v", files, err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				t.Errorf("%s: link %s leaves the repository", f, target)
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
				rel, err := filepath.Rel(root, dest)
				if err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s: link %s leaves the repository", f, target)
					continue
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %s: %v", f, target, err)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !hasAnchor(t, dest, anchor) {
				t.Errorf("%s: link %s: no heading with anchor #%s in %s", f, target, anchor, dest)
			}
		}
	}
}

// hasAnchor reports whether a heading of the Markdown file gets the anchor
// GitHub gives it: lower case, punctuation dropped, spaces as "-".
func hasAnchor(t *testing.T, file, anchor string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var slug strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		if slug.String() == anchor {
			return true
		}
	}
	return false
}
