package apisix

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/rhi-daemon/rhi/internal/health"
)

// Mode is how a poll reads the control API (apisix_poll_mode).
//
// Per-upstream requests cost the client ~40 µs of CPU and the control API
// about as much per distinct resource and poll (BENCHMARKS.md): at 10,000
// upstreams ~500 ms of CPU and ~100 MB allocated per poll, all of it work for
// the nginx workers that carry APISIX's traffic. One GET /v1/healthcheck
// answers the same for ~16 ms of the client's CPU. The list cannot tell "no checker" from "not
// found" (both are simply absent), so every key it lacks is still fetched
// one by one, in the same poll: the two 404s (no checker, not found) keep their meaning.
type Mode string

const (
	// ModePerUpstream sends one request per distinct resource, every poll.
	ModePerUpstream Mode = "per_upstream"

	// ModeList starts every poll with one GET /v1/healthcheck and answers
	// each key whose resource the list holds from its entry, with the
	// rules of a single body (purging nodes ignored, no nodes = NoChecker).
	// Keys the list lacks are fetched one by one. An entry is matched to
	// keys by the last two segments of its name, like keys themselves, so
	// "/apisix/upstreams/api" and standalone "/upstreams/api" both answer
	// upstreams/api; a resource the list names twice is fetched on its own.
	//
	// The list is decoded as it arrives, keeping only the entries the
	// poll's keys name, so its memory is about one entry's, however long
	// it is (BENCHMARKS.md). The list request and its decoding
	// get half of what is left of the poll's deadline, which the decoder
	// checks as it goes. If the list fails in any way (connection,
	// deadline, not 200, HTML, more than MaxListBytes or MaxListEntries,
	// one entry over MaxBodyBytes, not a list) every key is fetched one by
	// one in the rest of the deadline, as ModePerUpstream would: a broken
	// list costs time, never a verdict. Half, so that a stalled list leaves the
	// fallback as long as the list had; when the list fails because the
	// whole control API is stalled, the fallback fails too, within the
	// same apisix_timeout, and every key is Failed with its own error.
	//
	// A list in the 2.x–3.2 format (entries with src_type and
	// healthy_nodes) is not used at all and every key is fetched one by
	// one. Those versions list only the checkers of the nginx worker that
	// answered, so most keys would be missing and fetched anyway (list plus
	// almost one request per key), and which keys the list holds would
	// change from poll to poll with the worker. Use ModePerUpstream or
	// ModeAuto with them.
	ModeList Mode = "list"

	// ModeAuto uses the list as ModeList does when a poll has at least
	// AutoMinKeys distinct resources and the list's last answer was
	// usable: the 3.3+ format, and it answered at least one key. After
	// an answer that was not (2.x format, empty, none of our keys, or a
	// failure) the next AutoRetryPolls such polls are per upstream, then
	// the list is tried again (APISIX may have been upgraded, or its
	// checkers created). Below AutoMinKeys it is always per upstream.
	ModeAuto Mode = "auto"
)

const (
	// AutoMinKeys is the fewest distinct resources for which ModeAuto
	// uses the list. Below it per-upstream requests cost a few ms of CPU
	// per poll, while the list holds every checker APISIX has, which may
	// be far more than a small config asks about.
	AutoMinKeys = 100
	// AutoRetryPolls is how many polls ModeAuto stays per upstream after
	// a list answer it could not use: about half a minute at a 1 s poll.
	AutoRetryPolls = 30
)

// listPath is the control API's list of every health checker.
const listPath = "/v1/healthcheck"

func validMode(m Mode) bool {
	switch m {
	case "", ModePerUpstream, ModeList, ModeAuto:
		return true
	}
	return false
}

// autoState is ModeAuto's memory: polls that could use the list are
// counted, and the list is skipped until the count passes pausedUntil.
// Atomics keep Poll safe for concurrent use; two polls racing only shift
// the next try by a poll.
type autoState struct {
	polls       atomic.Uint64
	pausedUntil atomic.Uint64
}

// pause skips the list for the next AutoRetryPolls eligible polls.
func (a *autoState) pause() { a.pausedUntil.Store(a.polls.Load() + AutoRetryPolls) }

// listFirst reports whether a poll of n distinct resources starts with the
// list.
func (c *Client) listFirst(n int) bool {
	switch c.mode {
	case ModeList:
		return n > 0
	case ModeAuto:
		return n >= AutoMinKeys && c.auto.polls.Add(1) > c.auto.pausedUntil.Load() && c.costs.listPays(n, c.auto.polls.Load())
	}
	return false
}

// fromList answers the jobs whose resource the list holds and reports
// whether the list was usable: the 3.3+ format, and it answered at least
// one job. jobs[j] is plan's resource j. Jobs it does not answer are left
// for fetchEach.
func (c *Client) fromList(ctx context.Context, jobs []job, plan *Plan, cost *Cost) bool {
	deadline, _ := ctx.Deadline() // Poll's context always has one
	lctx, cancel := c.listTimeout(ctx, time.Until(deadline)/2)
	t0 := time.Now()
	entries, size, err := c.getList(lctx, plan, jobs)
	countList(cost, time.Since(t0), entries, size, err == nil)
	cancel()
	if err != nil {
		// Not logged, not returned: the per-upstream requests that follow
		// decide every verdict, and their errors are what callers see.
		return false
	}
	answered := 0
	for i := range jobs {
		if jobs[i].listed != 1 {
			continue
		}
		r := jobs[i].res
		if r.Verdict == health.Failed {
			// An entry the list holds but garbled: its own endpoint may
			// still answer, so ask it (a broken list costs time, never a
			// verdict).
			continue
		}
		if r.Err != nil {
			r.Err = fmt.Errorf("GET %s: %s: %w", listPath, jobs[i].ref, r.Err)
		}
		jobs[i].res, jobs[i].done = r, true
		answered++
	}
	return answered > 0
}

// getList fetches the list and decodes it as it arrives, keeping only the
// resources of plan: what it says of plan's resource j is in jobs[j]
// (decodeListJobs). It returns the list's entries and bytes.
func (c *Client) getList(ctx context.Context, plan *Plan, jobs []job) (entries int, size int64, err error) {
	resp, err := c.send(ctx, listPath)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	switch ct := resp.Header.Get("Content-Type"); {
	case resp.StatusCode != http.StatusOK:
		return 0, 0, fmt.Errorf("HTTP %d", resp.StatusCode)
	case isHTML(ct):
		return 0, 0, fmt.Errorf("HTTP 200 with content type %q", ct)
	case resp.ContentLength > c.maxList:
		return 0, 0, fmt.Errorf("body of %d bytes exceeds the %d-byte limit", resp.ContentLength, c.maxList)
	}
	return decodeListJobs(ctx, resp.Body, plan, jobs, listLimits{
		bytes:      c.maxList,
		entries:    c.maxEntries,
		entryBytes: max(c.maxBody, minListEntryBytes),
	})
}

// minListEntryBytes is the least room one list entry gets, whatever
// MaxBodyBytes says: the decoder reads ahead by up to a few KiB.
const minListEntryBytes = 64 << 10
