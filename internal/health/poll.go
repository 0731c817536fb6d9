package health

import "time"

// PollCost is what one poll asked of the health source, as its client
// measured it. A request's time runs from sending it to the end of its
// answer's body. A source that answers in the workers that carry its
// traffic (APISIX does) serves nothing else meanwhile, so this is what
// rhi's polling costs the traffic. It also holds rhi's own reading of the
// answer, so it errs on the side of too much. The daemon budgets its polls
// with it.
type PollCost struct {
	// Busy is the sum of the requests' times.
	Busy time.Duration
	// Requests is how many requests the poll sent.
	Requests int
	// List is the list request's time; zero when the poll read no list.
	List time.Duration
	// ListEntries and ListBytes are the list's entries (the checkers
	// the source holds: what the list costs it to build) and bytes, as
	// far as they were read; ListRead says whether a list was read whole.
	ListEntries int
	ListBytes   int64
	ListRead    bool
	// One is the one-upstream requests' time, OneRequests their number.
	One         time.Duration
	OneRequests int
}

// PollOptions shape one poll.
type PollOptions struct {
	// Spread spreads the poll's one-upstream requests evenly over this
	// long: request i starts no earlier than i×Spread/n after the first,
	// so that the source sees them one at a time with gaps between them
	// instead of back to back. It is cut to half of the poll's deadline.
	// Zero sends them as fast as the client's in-flight limit allows.
	Spread time.Duration
	// NoList reads every resource with its own request, whatever the
	// mode: a poll of a few upstreams (the daemon's fast polls) must not
	// pay for the list of every checker.
	NoList bool
}
