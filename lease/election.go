package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Holder is who holds a name, as Election.Leader and Election.Observe
// report it.
type Holder struct {
	Held bool
	// Owner is the holder's Config.Owner (the owner it gave the server,
	// for a holder that is not this package's client). Lease.Owner keeps
	// the session's suffix: tell this client's own term by its Epoch, or
	// by Election.Lease.
	Owner string
	Epoch int64 // the holder's epoch; when not held, the epoch the name had last
	// Err, on the last value before the channel closes, says why the
	// observer can no longer tell (the server unreachable for a TTL).
	Err error
}

// candidate cuts the session's suffix ("#" token ".s" N: sessionFor)
// off owner; an owner without one (not this package's client) is kept.
func candidate(owner string) string {
	i := strings.LastIndexByte(owner, '#')
	if i < 0 {
		return owner
	}
	tok, n, ok := strings.Cut(owner[i+1:], ".s")
	if !ok || len(tok) != 12 || strings.Trim(tok, "0123456789abcdef") != "" || n == "" || strings.Trim(n, "0123456789") != "" {
		return owner
	}
	return owner[:i]
}

func holderOf(st state) Holder {
	return Holder{Held: st.held, Owner: candidate(st.owner), Epoch: st.epoch}
}

// observeFast is the first wait of an observer that has seen a release
// (or a name become free): the next holder is usually granted within a
// round trip of it, and each look after this waits twice as long, up to
// PollMax.
const observeFast = time.Millisecond

// observe follows who holds name, for Election.Observe.
func (c *Client) observe(ctx context.Context, name string) <-chan Holder {
	out := make(chan Holder, 1)
	go func() {
		defer close(out)
		wake := c.listen.watch(ctx, name)
		defer c.listen.unwatch(name, wake)
		var last *Holder
		lastOK := time.Now()
		fast := observeFast
		for {
			st, err := c.inspect(ctx, name)
			switch {
			case err == nil:
				lastOK = time.Now()
				h := holderOf(st)
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
			switch {
			case err != nil:
			case st.held:
				// until it runs out; then the name is free and looked at fast
				wait = min(wait, st.left+time.Millisecond)
				fast = observeFast
			default:
				wait = fast
				fast = min(2*fast, c.cfg.PollMax)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-wake:
				fast = observeFast
			case <-t.C:
			}
			t.Stop()
		}
	}()
	return out
}

// ErrNoLeader: Election.Leader found nobody holding the name.
var ErrNoLeader = errors.New("lease: no leader")

// Election is a campaign for leadership of one name, in the shape of
// etcd's concurrency.Election: Campaign waits until this client leads,
// Leader says who leads now, Resign steps down, Observe follows every
// leader. Unlike etcd's, a leader carries no value (Proclaim has no
// counterpart): its epoch is its identity and its fencing token. It is
// safe for concurrent use.
type Election struct {
	c    *Client
	name string

	mu sync.Mutex
	l  *Lease // this client's term, while it leads
}

// Election is a campaign for name on this client.
func (c *Client) Election(name string) *Election { return &Election{c: c, name: name} }

// Name is the name campaigned for.
func (e *Election) Name() string { return e.name }

// Campaign waits until this client leads (it acquires the name, waiting
// as Acquire does) or ctx ends, and returns the term's lease: lead while
// its Context lasts, fence with its Epoch. Campaigning while leading
// returns the current term.
func (e *Election) Campaign(ctx context.Context) (*Lease, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.l != nil && e.l.Err() == nil {
		return e.l, nil
	}
	l, err := e.c.Acquire(ctx, e.name)
	if err != nil {
		return nil, err
	}
	e.l = l
	return l, nil
}

// Lease is this client's term while it leads, nil otherwise (it may have
// just been lost: check its Err).
func (e *Election) Lease() *Lease {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.l != nil && e.l.Err() != nil {
		e.l = nil
	}
	return e.l
}

// Resign ends this client's term, releasing the name so that another
// candidate takes it at once; it does nothing when this client does not
// lead. An error means the server could not be told (the name then
// lapses at the TTL); the term has ended either way.
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	l := e.l
	e.l = nil
	e.mu.Unlock()
	if l == nil {
		return nil
	}
	return l.Release(ctx)
}

// Leader says who leads now, as the server sees it, with its epoch:
// ErrNoLeader when nobody holds the name.
func (e *Election) Leader(ctx context.Context) (Holder, error) {
	st, err := e.c.inspect(ctx, e.name)
	if err != nil {
		return Holder{}, fmt.Errorf("lease %q: leader: %w", e.name, err)
	}
	if !st.held {
		return holderOf(st), ErrNoLeader
	}
	return holderOf(st), nil
}

// Observe reports who leads (holds the name): the state at once, then each change,
// until ctx ends or the observer can no longer tell (no lease.inspect
// succeeded for a TTL: the last value carries Err). It wakes when a
// holder releases the name (lease.watch) and when the holder's lease
// runs out (server time); while the name is free it looks again after
// 1 ms, doubling up to PollMax, so a holder granted after a release is
// reported within a few ms of its grant.
//
// Every holder whose lease lasts longer than those looks is reported, in
// order, once. A holder whose whole term falls between two looks (a term
// of a few ms, or one that begins on a free name after PollMax of quiet
// and ends before the next look) is not: a reported epoch more than one
// above the last one says that holders came between (within one era of
// the server: an era's first grant jumps).
func (e *Election) Observe(ctx context.Context) <-chan Holder { return e.c.observe(ctx, e.name) }
