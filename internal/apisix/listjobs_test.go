package apisix

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/rhi-daemon/rhi/internal/health"
)

// jobsLimits are no limits, for the tests of this file alone.
var jobsLimits = listLimits{bytes: 1 << 40, entries: 1 << 30, entryBytes: 1 << 40}

// FuzzDecodeListJobs holds decodeListJobs, which a poll runs, to
// decodeHealthList with a want map of the same resources: the same
// verdicts, counts and number of entries per resource, and an error
// exactly when it has one.
func FuzzDecodeListJobs(f *testing.F) {
	for _, s := range []string{
		`[{"name":"/apisix/upstreams/1","type":"http","nodes":[{"status":"healthy"},{"status":"unhealthy"}]}]`,
		`[{"name":"/a/upstreams/x","nodes":[]},{"name":"//upstreams/x","nodes":[]},{"name":"upstreams/x","nodes":[]}]`,
		`[{"name":"/a//b/routes/1","nodes":[]},{"name":"/a/b/routes/1/","nodes":[]},{"name":"/routes/1","nodes":[{"status":"healthy"}]}]`,
		`[{"name":"\/a\/services\/w","nodes":[]},{"name":"/a/services/w\u002f","nodes":[]},{"name":"/services/w/.","nodes":[]}]`,
		`[{"name":"a/upstreams/y","nodes":[]},{"name":"/x/upstreams/..","nodes":[]},{"name":"/x/upstream/a","nodes":[]},{"name":"/stream_routes/a","nodes":[]}]`,
		`[{"name":"/u/upstreams/2","nodes":[{"status":"mostly_healthy"}]},{"name":"/v/upstreams/2","nodes":[{"status":"he\u0061lthy"}]}]`,
		`[{"name":"/u/upstreams/3","nodes":[{"status":"\u0068ealthy","purge_time":1}, null, {"status":null}]}]`,
		`{}`, `null`, `[]`, `[{"src_type":"upstreams","name":"/u/upstreams/1"}]`, `[{"name":1}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want := resourcesNamed(body)
		refs := make([]Ref, 0, len(want))
		for _, ref := range want {
			refs = append(refs, ref)
		}
		plan := planOf(refs)
		old, oldErr := decodeHealthList(context.Background(), bytes.NewReader(body), want, jobsLimits)
		jobs := make([]job, len(refs))
		for j, ref := range refs {
			jobs[j].ref = ref
		}
		_, _, err := decodeListJobs(context.Background(), bytes.NewReader(body), plan, jobs, jobsLimits)
		if (err == nil) != (oldErr == nil) {
			t.Fatalf("%q: jobs: %v; want map: %v", body, err, oldErr)
		}
		if err != nil {
			return
		}
		for j := range jobs {
			o := old[refs[j]]
			if got, exp := describeJob(jobs[j]), describeListed(o); got != exp {
				t.Errorf("%q: %s: jobs %s, want map %s", body, refs[j], got, exp)
			}
		}
	})
}

// planOf plans a poll of distinct refs, each under a key of its own: the
// plan's resource j is refs[j].
func planOf(refs []Ref) *Plan {
	ups := make([]health.Upstream, len(refs))
	for j, ref := range refs {
		ups[j] = health.Upstream{Key: "/" + ref.String()}
	}
	return NewPlan(ups)
}

// resourcesNamed returns, by "<type>/<id>", every valid resource named by
// two "/"-separated words of body: those the list names, and some it names
// with a prefix ParseRef rejects.
func resourcesNamed(body []byte) map[string]Ref {
	want := map[string]Ref{}
	words := strings.FieldsFunc(string(body), func(r rune) bool {
		return r != '/' && r != '_' && r != '.' && r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		segs := strings.Split(w, "/")
		for i := 0; i+1 < len(segs); i++ {
			if ref := (Ref{Type: segs[i], ID: segs[i+1]}); ref.Check() == nil {
				want[ref.String()] = ref
			}
		}
	}
	return want
}

func describeListed(l listed) string {
	return fmt.Sprintf("%d entries, %s %d/%d, err %v", l.entries, l.res.Verdict, l.res.Healthy, l.res.Total, l.res.Err != nil)
}

func describeJob(j job) string {
	return describeListed(listed{res: j.res, entries: int(j.listed)})
}

// TestDecodeListJobsReadsStatusInPlace: a node's status is read in place,
// escaped or not, and only "healthy" and "mostly_healthy" count.
func TestDecodeListJobsReadsStatusInPlace(t *testing.T) {
	body := `[{"name":"/a/upstreams/1","nodes":[{"status":"he\u0061lthy"},{"status":"unhealthy"}]},
	{"name":"/a/upstreams/2","nodes":[{"status":"mostly_unhealthy"},{"status":"Healthy"},{"status":null}]},
	{"name":"/a/upstreams/3","nodes":[{"status":"mostly_healthy"}]}]`
	plan := planOf([]Ref{{Type: "upstreams", ID: "1"}, {Type: "upstreams", ID: "2"}, {Type: "upstreams", ID: "3"}})
	jobs := make([]job, 3)
	if _, _, err := decodeListJobs(context.Background(), strings.NewReader(body), plan, jobs, jobsLimits); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1 entries, up 1/2, err false",
		"1 entries, down 0/3, err false",
		"1 entries, up 1/1, err false",
	}
	for j := range jobs {
		if got := describeJob(jobs[j]); got != want[j] {
			t.Errorf("upstreams/%d: %s, want %s", j+1, got, want[j])
		}
	}
}
