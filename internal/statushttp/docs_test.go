package statushttp

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/router"

	"github.com/rhi-daemon/rhi/internal/status"
)

// metricsDoc is the metrics reference that operators read.
const metricsDoc = "../../docs/metrics.md"

// docRows reads the tables of the metrics reference: for each row whose
// first cell is a `metric`, the text of its labels cell.
func docRows(t *testing.T) (rows map[string]string, text string) {
	t.Helper()
	b, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatalf("read the metrics reference: %v", err)
	}
	rows = map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		rows[name] = cells[3]
	}
	return rows, string(b)
}

// registered returns every metric the daemon exports, with its label
// names: what a scrape of a busy daemon gathers, and every family the rhi
// collector may write, so that a metric emitted only in some state (an
// error, a drain) is not missed because the sample lacks that state.
func registered(t *testing.T) map[string][]string {
	t.Helper()
	src := &fixed{sample()}
	m := NewMetrics(src, "dev")
	m.ObservePoll(0, 0)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string][]string{}
	for _, f := range fams { // *dto.MetricFamily, not named: client_model stays an indirect module
		seen := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				seen[l.GetName()] = true
			}
		}
		for n := range seen {
			out[f.GetName()] = append(out[f.GetName()], n)
		}
	}
	for _, f := range statusFamilies() { // the collector's, written outside the registry
		if _, ok := out[f.name]; !ok { // not emitted by the sample
			out[f.name] = f.labels
		}
	}
	return out
}

// TestMetricsDocumented fails when a metric the daemon registers, or a
// label of one, is missing from docs/metrics.md. The Go runtime's and the
// process's metrics are documented as families.
func TestMetricsDocumented(t *testing.T) {
	rows, text := docRows(t)
	reg := registered(t)
	if len(reg) < 20 {
		t.Fatalf("gathered only %d metrics; the test no longer sees the registry", len(reg))
	}
	names := make([]string, 0, len(reg))
	for n := range reg {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case strings.HasPrefix(name, "go_"):
			if !strings.Contains(text, "`go_*`") {
				t.Errorf("%s: the go_* family is not mentioned in %s", name, metricsDoc)
			}
			continue
		case strings.HasPrefix(name, "process_"):
			if !strings.Contains(text, "`process_*`") {
				t.Errorf("%s: the process_* family is not mentioned in %s", name, metricsDoc)
			}
			continue
		}
		labels, ok := rows[name]
		if !ok {
			t.Errorf("metric %s is registered but has no row in %s", name, metricsDoc)
			continue
		}
		for _, l := range reg[name] {
			if !strings.Contains(labels, "`"+l+"`") {
				t.Errorf("metric %s: label %q is not in its row of %s (labels cell: %q)", name, l, metricsDoc, strings.TrimSpace(labels))
			}
		}
	}
}

// statusDoc is the reference of /status and `rhi verify --json`.
const statusDoc = "../../docs/status-json.md"

// jsonFields walks the json tags of t: every field as a path
// ("vips[].bird.agrees"). Structs, pointers to them and lists of them are
// walked into; times, maps and scalars are values.
func jsonFields(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		path := prefix + name
		out = append(out, path)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct && ft != reflect.TypeOf(time.Time{}):
			out = append(out, jsonFields(ft, path+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			if path == "bird.protocols" {
				continue // documented once, under rhi verify's check.protocols[]
			}
			out = append(out, jsonFields(ft.Elem(), path+"[].")...)
		}
	}
	return out
}

// TestStatusJSONDocumented fails when a field of /status has no row in
// docs/status-json.md.
func TestStatusJSONDocumented(t *testing.T) {
	b, err := os.ReadFile(statusDoc)
	if err != nil {
		t.Fatalf("read the status reference: %v", err)
	}
	text := string(b)
	fields := jsonFields(reflect.TypeOf(status.Status{}), "")
	if len(fields) < 40 {
		t.Fatalf("found only %d fields; the walk no longer sees the json tags: %v", len(fields), fields)
	}
	for _, f := range fields {
		if !strings.Contains(text, "| `"+f+"` |") {
			t.Errorf("/status field %s has no row in %s", f, statusDoc)
		}
	}
	for _, f := range jsonFields(reflect.TypeOf(router.ProtocolState{}), "check.protocols[].") {
		if !strings.Contains(text, "| `"+f+"` |") {
			t.Errorf("rhi verify --json field %s has no row in %s", f, statusDoc)
		}
	}
	for _, f := range jsonFields(reflect.TypeOf(router.VIPReport{}), "check.vips[].") {
		if !strings.Contains(text, "| `"+f+"` |") {
			t.Errorf("rhi verify --json field %s has no row in %s", f, statusDoc)
		}
	}
}
