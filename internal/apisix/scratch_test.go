package apisix_test

import (
	"context"
	"maps"
	"net/http"
	"sync"
	"testing"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/health"
)

// TestPollsShareNoJobs: a client lends one poll's jobs to the next. Polls
// of two plans that overlap on one client (the daemon's poll, a fast poll,
// another caller's), with and without the list, each answer every key of
// their own plan as it is, and a snapshot a poll returned never changes
// after later polls. Run it with -race: a job written after its poll
// returned, or shared by two polls, is a race.
func TestPollsShareNoJobs(t *testing.T) {
	srv := listFake()
	_, keys := manyUpstreams(srv, apisix.AutoMinKeys+20)
	ts := srv.Start()
	defer srv.Close()
	for _, mode := range []apisix.Mode{apisix.ModeList, apisix.ModePerUpstream, apisix.ModeAuto} {
		c := newClient(t, ts.URL, apisix.Options{Mode: mode, MaxInFlight: 4})
		big, small := c.Plan(ups(keys...)), c.Plan(ups(listKeys...))
		var (
			mu     sync.Mutex
			snaps  []health.Snapshot
			copies []map[string]got
			wg     sync.WaitGroup
		)
		for g := range 4 {
			wg.Go(func() {
				for i := range 3 {
					p, opts := big, health.PollOptions{}
					if (g+i)%2 == 1 {
						p, opts = small, health.PollOptions{NoList: g == 1}
					}
					s, _ := c.PollPlan(context.Background(), p, opts)
					mu.Lock()
					snaps, copies = append(snaps, s), append(copies, summarize(s))
					mu.Unlock()
					if len(s) != len(p.Upstreams()) {
						t.Errorf("%s: %d results for %d keys", mode, len(s), len(p.Upstreams()))
					}
					for _, u := range p.Upstreams() {
						r := s[u.Key]
						want, listed := wantPerUpstream[u.Key]
						if !listed {
							want = got{health.Up, 1, 2}
						}
						if (got{r.Verdict, int(r.Healthy), int(r.Total)}) != want {
							t.Errorf("%s: %s is %v %d/%d (%v), want %v", mode, u.Key, r.Verdict, r.Healthy, r.Total, r.Err, want)
						}
					}
				}
			})
		}
		wg.Wait()
		for i := range snaps {
			if !maps.Equal(copies[i], summarize(snaps[i])) {
				t.Errorf("%s: snapshot %d changed after its poll returned", mode, i)
			}
		}
		c.CloseIdleConnections()
	}
}

// TestPollOverlapGetsItsOwnJobs: a poll that starts while another is
// reading must not be lent the jobs the other holds. The first poll is
// held after it has read its first resource; a poll of other resources
// runs to its end meanwhile; the first then reads the rest, and still
// reports what it read of its first resource.
func TestPollOverlapGetsItsOwnJobs(t *testing.T) {
	srv := listFake()
	_, keys := manyUpstreams(srv, 10) // more resources than listKeys
	hold, held, release := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/healthcheck/upstreams/u1" {
			select {
			case <-hold:
				close(held)
				<-release
			default:
			}
		}
		srv.ServeHTTP(w, r)
	})
	c := newClient(t, "http://apisix.test", apisix.Options{Mode: apisix.ModePerUpstream, MaxInFlight: 1, HTTPClient: inProcess(h)})
	plan := c.Plan(ups(keys...))
	c.PollPlan(context.Background(), plan, health.PollOptions{}) // leaves its jobs for the next

	hold <- struct{}{}
	first := make(chan health.Snapshot)
	go func() {
		s, _ := c.PollPlan(context.Background(), plan, health.PollOptions{})
		first <- s
	}()
	<-held // u0 read, u1 asked
	other := c.Poll(context.Background(), ups(listKeys...))
	close(release)
	s := <-first

	for _, k := range keys {
		if r := s[k]; (got{r.Verdict, int(r.Healthy), int(r.Total)}) != (got{health.Up, 1, 2}) {
			t.Errorf("%s: %v %d/%d (%v), want up 1/2", k, r.Verdict, r.Healthy, r.Total, r.Err)
		}
	}
	if diff := summarize(other); !maps.Equal(diff, wantPerUpstream) {
		t.Errorf("the overlapping poll: %v, want %v", diff, wantPerUpstream)
	}
}
