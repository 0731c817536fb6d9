package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
)

// gridSlack is how far from the grid a poll may start and still count as
// on it: the ticker's and the scheduler's latency.
const gridSlack = 3 * time.Millisecond

// grid is rhi's poll schedule. rhi's loop runs on a time.Ticker, which
// fires at anchor + k·interval; a poll starts on a tick unless the loop was
// still busy with the previous one, in which case it starts late, off the
// grid, and the ticks after it are back on it.
type grid struct {
	anchor   time.Time
	interval time.Duration
}

// next returns the first grid time at or after t.
func (g grid) next(t time.Time) time.Time {
	d := t.Sub(g.anchor)
	k := d / g.interval // truncates towards zero: a ceiling for d < 0
	if d > k*g.interval {
		k++
	}
	return g.anchor.Add(k * g.interval)
}

// off returns how far t lies from the nearest grid time, negative when
// before it.
func (g grid) off(t time.Time) time.Duration {
	d := t.Sub(g.anchor) % g.interval
	if d < 0 {
		d += g.interval
	}
	if d > g.interval/2 {
		d -= g.interval
	}
	return d
}

// findGrid watches rhi's status until two consecutive polls started one
// interval apart, and anchors the grid on the second.
func findGrid(ctx context.Context, s *site.Site) (grid, error) {
	st, err := s.Status(ctx)
	if err != nil {
		return grid{}, err
	}
	interval := st.ControlAPI.PollInterval
	if interval <= 0 {
		return grid{}, fmt.Errorf("status gives poll interval %s", interval)
	}
	g := grid{interval: interval}
	prevPolls, prevStart := st.ControlAPI.Polls, st.ControlAPI.LastPoll
	err = lab.Eventually(ctx, 30*time.Second, interval/5, func(ctx context.Context) error {
		st, err := s.Status(ctx)
		if err != nil {
			return err
		}
		api := st.ControlAPI
		consecutive := api.Polls == prevPolls+1
		d := api.LastPoll.Sub(prevStart) - interval
		prevPolls, prevStart = api.Polls, api.LastPoll
		if consecutive && d >= -gridSlack && d <= gridSlack {
			g.anchor = api.LastPoll
			return nil
		}
		return fmt.Errorf("no two consecutive polls one interval apart yet (polls %d, last %s)", api.Polls, api.LastPoll.Format(time.StampMicro))
	})
	return g, err
}

// refresh moves the anchor to rhi's last poll if that started earlier
// relative to the grid: a tick never fires early, only late, so the
// earliest start seen is the best estimate of the grid. It waits while the
// last poll is off the grid (started late after a long one).
func (g *grid) refresh(ctx context.Context, s *site.Site) error {
	return lab.Eventually(ctx, 30*time.Second, g.interval/2, func(ctx context.Context) error {
		st, err := s.Status(ctx)
		if err != nil {
			return err
		}
		last := st.ControlAPI.LastPoll
		off := g.off(last)
		if off > gridSlack || off < -gridSlack {
			return fmt.Errorf("last poll %s is %s off the grid", last.Format(time.StampMicro), off)
		}
		if off < 0 {
			g.anchor = last
		}
		return nil
	})
}
