package apisix

import (
	"context"
	"sync"
	"time"

	"github.com/rhi-daemon/rhi/internal/health"
)

// Cost is what one poll asked of the control API, as the client measured
// it (health.PollCost: the words the daemon budgets with). APISIX serves
// its control API in the nginx workers that carry its traffic, and on the
// loopback almost all of a request's time is the worker's work for it
// (building and encoding the answer), during which the worker serves
// nothing else.
type Cost = health.PollCost

// countList counts the list request in c.
func countList(c *Cost, d time.Duration, entries int, size int64, ok bool) {
	c.Busy += d
	c.Requests++
	c.List = d
	c.ListEntries, c.ListBytes, c.ListRead = entries, size, ok
}

// countOne counts a one-upstream request in c.
func countOne(c *Cost, d time.Duration) {
	c.Busy += d
	c.Requests++
	c.One += d
	c.OneRequests++
}

// costMemory keeps running estimates of what a list and a one-upstream
// request cost, so that ModeAuto can choose by measured cost: a list costs
// APISIX in proportion to every checker it holds (~40 µs each on a real
// APISIX 3.x), a one-upstream request a fraction of a millisecond that
// grows with the upstreams APISIX holds. With many more checkers in APISIX
// than resources rhi reads, the requests one by one are cheaper.
type costMemory struct {
	mu sync.Mutex
	// list and one are moving averages of a whole list's time and of one
	// request's; zero: not measured yet.
	list, one time.Duration
	// entries is the last whole list's length.
	entries int
	// oneAt is the auto poll count at which one was last measured, and
	// listAt the count at which the list was last measured.
	oneAt, listAt uint64
	// skips counts list decisions lost to the requests one by one in a
	// row: the list is measured again after a wait that doubles with it.
	skips int
}

// smooth moves the estimate *e a quarter of the way towards d (or sets it,
// when there is none yet).
func smooth(e *time.Duration, d time.Duration) {
	if *e == 0 {
		*e = d
		return
	}
	*e += (d - *e) / 4
}

// add folds one poll's cost into the estimates; poll is ModeAuto's count
// of polls so far.
func (m *costMemory) add(c Cost, poll uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.ListRead {
		smooth(&m.list, c.List)
		m.entries = c.ListEntries
	}
	if c.OneRequests > 0 {
		smooth(&m.one, c.One/time.Duration(c.OneRequests))
		m.oneAt = poll
	}
}

// Estimates returns the client's running estimates of what a whole list and
// one one-upstream request take, zero when not measured yet, and the length
// of the last whole list read (the checkers APISIX holds).
func (c *Client) Estimates() (list, one time.Duration, entries int) {
	c.costs.mu.Lock()
	defer c.costs.mu.Unlock()
	return c.costs.list, c.costs.one, c.costs.entries
}

// costRetry is the fewest polls between two measures of the cost not
// chosen; it doubles with each loss, up to costRetryMax.
const (
	costRetry    = AutoRetryPolls
	costRetryMax = 32 * AutoRetryPolls
)

// listPays reports whether a poll of n resources, numbered poll, reads the
// list. It does unless the estimates say the requests one by one are
// clearly cheaper: the list holds more than listFar times n checkers (APISIX
// holds far more than rhi reads), and n one-upstream requests cost less
// than half a list. Until both costs are known the list is used (the
// one-upstream cost is learned beside it, sampleOne). While the requests
// one by one win, the list is measured again after costRetry polls, then
// twice as many, and so on: its cost changes with APISIX's configuration.
func (m *costMemory) listPays(n int, poll uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.list == 0 || m.one == 0 || m.entries <= listFar*n || 2*time.Duration(n)*m.one >= m.list {
		m.skips = 0
		m.listAt = poll
		return true
	}
	if poll-m.listAt >= uint64(min(costRetry<<min(m.skips, 5), costRetryMax)) {
		m.skips++
		m.listAt = poll
		return true
	}
	return false
}

// listFar is how many times more checkers than the resources a poll reads
// the list must hold before the requests one by one are considered: below
// it the list is the cheaper way whatever a noisy measure says.
const listFar = 4

// sampleOne keeps the one-upstream cost measured while polls read the
// list: when it has not been measured for costRetry polls, one resource
// (a different one each time) is also read on its own. Its answer only
// measures: the list's stays the verdict.
func (c *Client) sampleOne(ctx context.Context, jobs []job, cost *Cost) {
	if len(jobs) == 0 {
		return
	}
	poll := c.auto.polls.Load()
	c.costs.mu.Lock()
	due := c.costs.one == 0 || poll-c.costs.oneAt >= costRetry
	if due {
		c.costs.oneAt = poll
	}
	c.costs.mu.Unlock()
	if !due {
		return
	}
	t0 := time.Now()
	c.fetch(ctx, jobs[int(poll%uint64(len(jobs)))].ref)
	countOne(cost, time.Since(t0))
}
