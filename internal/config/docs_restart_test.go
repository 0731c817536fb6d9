package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// restartOnlyKeys is IsRestartOnly's list, read from the keys Diff
// compares, sorted.
func restartOnlyKeys(t *testing.T) []string {
	t.Helper()
	var keys []string
	v := reflect.ValueOf(Config{})
	walk(v, v, "", func(key string, _, _ reflect.Value) {
		if IsRestartOnly(key) {
			keys = append(keys, key)
		}
	})
	if len(keys) < 5 {
		t.Fatalf("only %d restart-only keys found: %v", len(keys), keys)
	}
	slices.Sort(keys)
	return keys
}

var backticked = regexp.MustCompile("`([^`]+)`")

// restartListInProse finds every "restart-only key (`a`, `b`, …)" in text
// and returns each list's keys, sorted.
func restartListInProse(text string) [][]string {
	flat := strings.Join(strings.Fields(text), " ")
	var lists [][]string
	for _, m := range regexp.MustCompile(`restart-only keys? \(([^)]*)\)`).FindAllStringSubmatch(flat, -1) {
		var keys []string
		for _, k := range backticked.FindAllStringSubmatch(m[1], -1) {
			keys = append(keys, k[1])
		}
		slices.Sort(keys)
		lists = append(lists, keys)
	}
	return lists
}

// TestRestartOnlyListsInDocs: every place that lists the keys a reload
// cannot change lists exactly IsRestartOnly's: the "on reload" column of
// docs/configuration.md, each "restart-only key (…)" of README.md and
// docs/operations.md, and the man page rhi.yaml(5) that
// packaging/gen-man.sh writes.
func TestRestartOnlyListsInDocs(t *testing.T) {
	want := restartOnlyKeys(t)

	rows, _ := docKeys(t)
	var doc []string
	for k, cells := range rows {
		if strings.HasPrefix(strings.TrimSpace(cells[3]), "restart only") && !strings.HasPrefix(k, "vips[].") {
			doc = append(doc, k)
		}
	}
	slices.Sort(doc)
	if !slices.Equal(doc, want) {
		t.Errorf("%s: rows marked \"restart only\" %v, IsRestartOnly %v", configDoc, doc, want)
	}

	for _, f := range []string{"../../README.md", "../../docs/operations.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lists := restartListInProse(string(b))
		if len(lists) == 0 {
			t.Errorf("%s: no \"restart-only key (…)\" list found", f)
		}
		for i, got := range lists {
			if !slices.Equal(got, want) {
				t.Errorf("%s: restart-only list %d is %v, IsRestartOnly %v", f, i+1, got, want)
			}
		}
	}

	b, err := os.ReadFile("../../packaging/gen-man.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\nA reload that changes\n")
	section, _, ok2 := strings.Cut(after, "\nis rejected as a whole")
	if !ok || !ok2 {
		t.Fatalf("packaging/gen-man.sh: no \"A reload that changes … is rejected as a whole\" paragraph")
	}
	var man []string
	for _, line := range strings.Split(section, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == ".B" || f[0] == ".BR") {
			man = append(man, f[1])
		}
	}
	slices.Sort(man)
	if !slices.Equal(man, want) {
		t.Errorf("packaging/gen-man.sh (rhi.yaml(5)): restart-only keys %v, IsRestartOnly %v", man, want)
	}
}
