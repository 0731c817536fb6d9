package fakeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Load is a steady stream of data-path requests whose latencies are
// timed: what a lab measures with and without rhi polling the fake.
type Load struct {
	// URL is what each request GETs, Host its Host header (empty: the
	// URL's).
	URL, Host string
	// Rate is the requests per second over all connections; 0 sends them
	// back to back.
	Rate float64
	// Conns is the number of kept connections the requests are spread
	// over, round-robin (0 means 1). The fake hands each connection to a
	// worker, so a few connections reach every worker.
	Conns int
	// Duration and Count end the load, whichever comes first; at least
	// one must be set.
	Duration time.Duration
	Count    int
	// Timeout bounds each request (0 means 5 s); a request that times out
	// counts as an error.
	Timeout time.Duration
	// Dial, when set, opens the load's connections (e.g. from inside a
	// network namespace); nil: net.Dialer's.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// LoadResult is what a Load measured.
type LoadResult struct {
	// Latencies of the answered requests, sorted. At a Rate, a request
	// that is sent late because its connection was still waiting for the
	// answers before counts from when it was due, so that a slow answer
	// weighs on every request it held up (no coordinated omission); one
	// sent on time counts from its sending.
	Latencies []time.Duration
	// Statuses counts the answers by HTTP status; Errors the requests that
	// got none.
	Statuses map[int]int
	Errors   int
}

// Quantile is the q-quantile (0 ≤ q ≤ 1) of the latencies, 0 when none.
func (r LoadResult) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	i := int(q * float64(len(r.Latencies)-1))
	return r.Latencies[min(max(i, 0), len(r.Latencies)-1)]
}

// String is "n=… p50=… p99=… max=…" and the statuses.
func (r LoadResult) String() string {
	return fmt.Sprintf("n=%d p50=%v p99=%v max=%v statuses=%v errors=%d",
		len(r.Latencies), r.Quantile(0.5), r.Quantile(0.99), r.Quantile(1), r.Statuses, r.Errors)
}

// RunLoad sends the load and returns what it measured; ctx ends it early.
func RunLoad(ctx context.Context, l Load) (LoadResult, error) {
	if l.Duration <= 0 && l.Count <= 0 {
		return LoadResult{}, errors.New("load: neither a duration nor a count")
	}
	if l.Rate < 0 {
		return LoadResult{}, fmt.Errorf("load: rate %v < 0", l.Rate)
	}
	conns := max(l.Conns, 1)
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if l.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.Duration)
		defer cancel()
	}
	var (
		mu  sync.Mutex
		res = LoadResult{Statuses: map[int]int{}}
		wg  sync.WaitGroup
	)
	start := time.Now()
	for c := range conns {
		// Connection c sends requests c, c+conns, c+2·conns, …
		n := -1
		if l.Count > 0 {
			n = (l.Count - c + conns - 1) / conns
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DialContext: l.Dial}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr, Timeout: timeout}
			for k := 0; n < 0 || k < n; k++ {
				from := time.Now()
				if l.Rate > 0 {
					due := start.Add(time.Duration(float64(k*conns+c) / l.Rate * float64(time.Second)))
					if wait := time.Until(due); wait > 0 {
						// On time: timed from the send, so that the
						// timer's own lateness does not count.
						t := time.NewTimer(wait)
						select {
						case <-ctx.Done():
							t.Stop()
							return
						case <-t.C:
						}
						from = time.Now()
					} else {
						from = due // behind, held up by the answers before
					}
				}
				if ctx.Err() != nil {
					return
				}
				status, err := getOnce(ctx, hc, l.URL, l.Host)
				d := time.Since(from)
				if ctx.Err() != nil {
					return // cut short by the end of the load: not a measurement
				}
				mu.Lock()
				if err != nil {
					res.Errors++
				} else {
					res.Statuses[status]++
					res.Latencies = append(res.Latencies, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(res.Latencies)
	return res, nil
}

func getOnce(ctx context.Context, hc *http.Client, url, host string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	if host != "" {
		req.Host = host
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}
