package apisix

import (
	"context"
	"time"
)

// SetListTimeout replaces how c bounds a poll's list request: f gets the
// poll's context and the list's share of its deadline, and returns the
// list's context.
func SetListTimeout(c *Client, f func(ctx context.Context, share time.Duration) (context.Context, context.CancelFunc)) {
	c.listTimeout = f
}
