package lease

import (
	"context"
	"fmt"
	"time"
)

// Campaign runs for leadership of name until ctx ends. Each time this
// client is elected (it acquires the name, waiting as Acquire does), lead
// runs with a context that ends when ctx ends or the lease is lost, and
// the lease's epoch as the leader's fencing token. When lead returns, the
// lease is released and the campaign goes on after PollMin, so that
// another candidate can win. Campaign returns ctx's error.
func (c *Client) Campaign(ctx context.Context, name string, lead func(ctx context.Context, l *Lease) error) error {
	for {
		err := c.Run(ctx, name, lead)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			c.log.Warn("pg_lease: a term ended with an error", "name", name, "err", err)
		}
		t := time.NewTimer(c.cfg.PollMin)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Holder is who holds a name, as Observe reports it.
type Holder struct {
	Held  bool
	Owner string // the holder's owner (its Config.Owner and a grant suffix)
	Epoch int64  // the holder's epoch; when not held, the epoch the name had last
	// Err, on the last value before the channel closes, says why the
	// observer can no longer tell (the server unreachable for a TTL).
	Err error
}

// Observe reports who holds name: the state at once, then each change,
// until ctx ends or the observer can no longer tell (no lease.inspect
// succeeded for a TTL: the last value carries Err). It wakes when a
// holder releases the name (lease.watch), when the holder's lease runs
// out (server time), and otherwise every PollMax.
func (c *Client) Observe(ctx context.Context, name string) <-chan Holder {
	out := make(chan Holder, 1)
	go func() {
		defer close(out)
		wake := c.listen.watch(ctx, name)
		defer c.listen.unwatch(name, wake)
		var last *Holder
		lastOK := time.Now()
		for {
			st, err := c.inspect(ctx, name)
			switch {
			case err == nil:
				lastOK = time.Now()
				h := Holder{Held: st.held, Owner: st.owner, Epoch: st.epoch}
				if last == nil || *last != h {
					last = &h
					select {
					case out <- h:
					case <-ctx.Done():
						return
					}
				}
			case ctx.Err() != nil:
				return
			case time.Since(lastOK) >= c.cfg.TTL:
				select {
				case out <- Holder{Err: fmt.Errorf("lease %q: cannot tell who holds it: no lease.inspect succeeded for %v: %w", name, c.cfg.TTL, err)}:
				case <-ctx.Done():
				}
				return
			}
			wait := c.cfg.PollMax
			if err == nil && st.held && st.left+time.Millisecond < wait {
				wait = st.left + time.Millisecond
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-wake:
			case <-t.C:
			}
			t.Stop()
		}
	}()
	return out
}
