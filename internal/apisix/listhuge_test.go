package apisix_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
)

// hugeList is a list of n tiny entries, {"name":"/a/upstreams/uN","nodes":{}},
// about 42 bytes each: 1.5 M of them make the 60 MiB list of issue 11,
// under the 64 MiB limit.
func hugeList(n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 44)
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":"/a/upstreams/u`)
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`","nodes":{}}`)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// memAPI answers from memory, without sockets: the list for /v1/healthcheck
// and one healthy node for every resource.
type memAPI struct{ list []byte }

func (m memAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	body := []byte(`{"name":"/a` + r.URL.Path[len("/v1/healthcheck"):] + `","nodes":[{"ip":"10.0.0.1","port":80,"status":"healthy"}],"type":"http"}`)
	if r.URL.Path == "/v1/healthcheck" {
		body = m.list
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}, nil
}

// BenchmarkListHuge is issue 11 row 6: a list poll for 10 keys against a
// 60 MiB list of 1.5 M tiny entries, with a deadline long enough that the
// poll never runs out of time. Run with -benchtime=3x; peak memory is best
// read as the test binary's maximum RSS (/usr/bin/time -v).
func BenchmarkListHuge(b *testing.B) {
	list := hugeList(1_500_000)
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = fmt.Sprintf("/a/upstreams/u%d", i*150_000)
	}
	c, err := apisix.NewClient("http://127.0.0.1:9090", apisix.Options{
		Mode: apisix.ModeList, Timeout: time.Minute,
		HTTPClient: &http.Client{Transport: memAPI{list}},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(list)))
	b.ReportAllocs()
	for b.Loop() {
		snap := c.Poll(context.Background(), keys)
		for _, k := range keys {
			if r := snap[k]; r.Verdict != apisix.NoChecker && r.Verdict != apisix.Up {
				b.Fatalf("%s: %v %v", k, r.Verdict, r.Err)
			}
		}
	}
}
