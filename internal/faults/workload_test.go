// Package faults is the proof that pg_lease never gives one epoch of a
// name to two holders across a crash (of the server, or of one backend
// while the postmaster lives), a failover, a split brain and a restore
// (into another cluster, in place, or beside its source): real PostgreSQL
// servers on unix sockets, a workload of clients acquiring, renewing and
// releasing a few names, one fault in the middle of each run, and a check
// over every grant given to a client. Given is the 0.4.0 contract's word:
// the client was told it holds the lease (its COMMIT returned, with or
// without PostgreSQL's warning that the wait for synchronous replication
// was cancelled), or, when the COMMIT's outcome is unknown (the connection
// was lost during it), lease.inspect on its next connection shows it as
// the holder at that epoch. A COMMIT that the server refused gave nothing.
//
// Each scenario also runs the variants that lack what it tests (0.2.0,
// 0.3.0, 0.4.0 without the durability floor or without eras), which must
// give an epoch twice or lose an acknowledged grant: the check is shown
// able to fail. A run counts, on each server that took clients over, the
// grants it gave them: one whose successor only answered errors fails.
package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pglease/pglease-gen/lease"
)

// Grant is one epoch a client was given, or may have been.
type Grant struct {
	Name, Owner string
	Epoch       int64
	Sure        bool // COMMIT returned without an error
	Warned      bool // COMMIT returned with the cancelled-wait warning
	Unknown     bool // the connection was lost during COMMIT
	Given       bool // Sure, or Unknown and then shown by lease.inspect
	After       bool // after the fault began
	Server      string
	Gen         int64 // the target's move the connection was made after
}

// Counts are the calls of a run.
type Counts struct {
	Before, After   int // calls that returned, before and after the fault
	FailedAfter     int // calls that failed after the fault
	GrantsAfter     int // grants after the fault
	Unknown, Warned int // grants whose COMMIT's outcome was unknown, or warned
	Settled         int // unknown ones that lease.inspect showed given
}

// target is where a group of clients sends its calls now: a DSN that the
// scenario changes when it moves them, and how many moves there were
// (a restarted server keeps its DSN: its clients connect anew).
type target struct {
	mu  sync.Mutex
	dsn string
	gen int64
}

func (t *target) set(dsn string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dsn = dsn
	t.gen++
	return t.gen
}

func (t *target) get() (string, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dsn, t.gen
}

// workload runs clients against targets until stop.
type workload struct {
	names    []string
	settings []string // SET statements each connection runs first
	// viaClient: the clients hold leases through the Go client package
	// (github.com/pglease/pglease-gen/lease), which settles unknown
	// outcomes itself and reports only given grants; a grant is recorded
	// when it reports one.
	viaClient bool

	mu     sync.Mutex
	grants []Grant
	counts Counts
	fault  atomic.Bool // the fault has begun
}

func (w *workload) run(ctx context.Context, groups []*target, clients int, seed uint64) {
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &client{w: w, id: i, t: groups[i%len(groups)], rng: rand.New(rand.NewPCG(seed, uint64(i))), held: map[string]held{}}
			if w.viaClient {
				c.clientLoop(ctx)
				return
			}
			c.loop(ctx)
		}()
	}
	wg.Wait()
}

type held struct {
	owner string
	epoch int64
}

type client struct {
	w      *workload
	id     int
	t      *target
	rng    *rand.Rand
	conn   *pgx.Conn
	dsn    string
	gen    int64
	n      int   // owners made
	unsure []int // grants (indexes) whose COMMIT's outcome is unknown
	held   map[string]held
	warned atomic.Bool // the last COMMIT's notice was the cancelled wait
	// through the Go client: one per target move, and the leases it holds
	lc     *lease.Client
	leases map[string]*lease.Lease
}

func (c *client) loop(ctx context.Context) {
	defer func() {
		if c.conn != nil {
			c.conn.Close(context.Background())
		}
	}()
	for ctx.Err() == nil {
		if dsn, gen := c.t.get(); c.conn == nil || c.dsn != dsn || c.gen != gen {
			if c.conn != nil {
				c.conn.Close(context.Background())
				c.conn = nil
			}
			if err := c.connect(ctx); err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
		}
		err := c.step(ctx)
		c.count(err)
		if err != nil {
			// whatever failed, start again on a fresh connection (the
			// server may be gone, or this one a standby now)
			c.conn.Close(context.Background())
			c.conn = nil
			if ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
}

func (c *client) connect(ctx context.Context) error {
	dsn, gen := c.t.get()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	cfg.ConnectTimeout = 2 * time.Second
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.Contains(n.Message, "synchronous replication") {
			c.warned.Store(true)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return err
	}
	for _, s := range c.w.settings {
		if _, err := conn.Exec(cctx, s); err != nil {
			conn.Close(context.Background())
			return err
		}
	}
	c.conn, c.dsn, c.gen = conn, dsn, gen
	return c.settle(cctx)
}

// settle asks lease.inspect, on a new connection, about each grant whose
// COMMIT's outcome was unknown: given when it shows that holder (owners
// are unique) at that epoch, never given otherwise.
func (c *client) settle(ctx context.Context) error {
	for len(c.unsure) > 0 {
		c.w.mu.Lock()
		g := c.w.grants[c.unsure[0]]
		c.w.mu.Unlock()
		var owner *string
		var epoch *int64
		if err := c.conn.QueryRow(ctx, "SELECT owner, epoch FROM lease.inspect($1)", g.Name).Scan(&owner, &epoch); err != nil {
			c.conn.Close(context.Background())
			c.conn = nil
			return err
		}
		if owner != nil && *owner == g.Owner && epoch != nil && *epoch == g.Epoch {
			c.w.mu.Lock()
			c.w.grants[c.unsure[0]].Given = true
			c.w.counts.Settled++
			c.w.mu.Unlock()
		}
		c.unsure = c.unsure[1:]
	}
	return nil
}

// count counts a call that returned (err nil) or failed.
func (c *client) count(err error) {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	after := c.w.fault.Load()
	switch {
	case err == nil && after:
		c.w.counts.After++
	case err == nil:
		c.w.counts.Before++
	case after:
		c.w.counts.FailedAfter++
	}
}

// clientLoop is loop through the Go client: a new client (its own
// connections) whenever the group moves, the sessions' settings passed as
// the connection's parameters.
func (c *client) clientLoop(ctx context.Context) {
	// Orphan, not Close: a client's leases end without a release that the
	// history does not record (Close releases on the server)
	defer func() {
		if c.lc != nil {
			c.lc.Orphan()
		}
	}()
	for ctx.Err() == nil {
		if dsn, gen := c.t.get(); c.lc == nil || c.dsn != dsn || c.gen != gen {
			if c.lc != nil {
				c.lc.Orphan() // its leases end (not released: they lapse)
			}
			lc, err := lease.New(dsn+sessionParams(c.w.settings), lease.Config{TTL: time.Second, Owner: fmt.Sprintf("c%d", c.id),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				c.lc = nil
				time.Sleep(20 * time.Millisecond)
				continue
			}
			c.lc, c.dsn, c.gen, c.leases = lc, dsn, gen, map[string]*lease.Lease{}
		}
		called, err := c.clientStep(ctx)
		if !called {
			continue
		}
		c.count(err)
		if err != nil && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond) // the client reconnects by itself
		}
	}
}

// clientStep takes a name the client does not hold (TryAcquire), or
// releases one it holds, or holds on to it a little while its keep-alive
// renews it; called says whether it made a call.
func (c *client) clientStep(ctx context.Context) (called bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	name := c.w.names[c.rng.IntN(len(c.w.names))]
	if l, ok := c.leases[name]; ok {
		if l.Err() != nil { // lost, or ended
			delete(c.leases, name)
			return false, nil
		}
		if c.rng.IntN(2) == 0 {
			time.Sleep(time.Duration(c.rng.IntN(20)) * time.Millisecond)
			return false, nil
		}
		delete(c.leases, name)
		var lost *lease.LostError
		if err := l.Release(cctx); err != nil && !errors.As(err, &lost) {
			return true, err
		}
		return true, nil
	}
	l, err := c.lc.TryAcquire(cctx, name)
	switch {
	case errors.Is(err, lease.ErrNotAcquired):
		return true, nil
	case err != nil:
		return true, err
	}
	c.record(Grant{Name: name, Owner: l.Owner, Epoch: l.Epoch, Sure: true, Given: true, Server: c.dsn, Gen: c.gen})
	c.leases[name] = l
	return true, nil
}

// sessionParams turns "SET name = value" statements into connection
// parameters ( name=value) for a key=value connection string.
func sessionParams(sets []string) string {
	var b strings.Builder
	for _, s := range sets {
		k, v, ok := strings.Cut(strings.TrimPrefix(s, "SET "), "=")
		if ok {
			fmt.Fprintf(&b, " %s=%s", strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return b.String()
}

// step makes one call in its own transaction: an acquire of a name the
// client does not hold, or a renew or release of one it holds.
func (c *client) step(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	name := c.w.names[c.rng.IntN(len(c.w.names))]
	h, holds := c.held[name]
	tx, err := c.conn.Begin(cctx)
	if err != nil {
		return err
	}
	rollback := func(err error) error {
		tx.Rollback(context.Background())
		return err
	}
	if !holds {
		c.n++
		owner := fmt.Sprintf("c%d-%d", c.id, c.n)
		var ok bool
		var epoch *int64
		ttl := time.Duration(50+c.rng.IntN(400)) * time.Millisecond
		if err := tx.QueryRow(cctx, "SELECT acquired, epoch FROM lease.acquire($1, $2, $3)", name, owner, ttl).Scan(&ok, &epoch); err != nil {
			return rollback(err)
		}
		if !ok {
			return rollback(nil)
		}
		err := c.commit(cctx, tx)
		var refused *pgconn.PgError
		unknown := err != nil && !(errors.As(err, &refused) && !strings.HasPrefix(refused.Code, "08") && !strings.HasPrefix(refused.Code, "57P"))
		i := c.record(Grant{Name: name, Owner: owner, Epoch: *epoch, Sure: err == nil, Warned: c.warned.Load(), Unknown: unknown,
			Given: err == nil, Server: c.dsn, Gen: c.gen})
		if unknown {
			c.unsure = append(c.unsure, i)
		}
		if err == nil {
			c.held[name] = held{owner, *epoch}
		}
		return err
	}
	var err2 error
	if c.rng.IntN(3) == 0 {
		var status string
		err2 = tx.QueryRow(cctx, "SELECT lease.release($1, $2, $3)", name, h.owner, h.epoch).Scan(&status)
		delete(c.held, name)
	} else {
		var status string
		err2 = tx.QueryRow(cctx, "SELECT status FROM lease.renew($1, $2, $3, $4)", name, h.owner, h.epoch, 400*time.Millisecond).Scan(&status)
		if err2 == nil && status != "ok" {
			delete(c.held, name)
		}
	}
	if err2 != nil {
		delete(c.held, name)
		return rollback(err2)
	}
	return c.commit(cctx, tx)
}

func (c *client) commit(ctx context.Context, tx pgx.Tx) error {
	c.warned.Store(false)
	return tx.Commit(ctx)
}

func (c *client) record(g Grant) int {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	g.After = c.w.fault.Load()
	if g.After && g.Given {
		c.w.counts.GrantsAfter++
	}
	if g.Unknown {
		c.w.counts.Unknown++
	}
	if g.Warned {
		c.w.counts.Warned++
	}
	c.w.grants = append(c.w.grants, g)
	return len(c.w.grants) - 1
}

// DoubleGrant is one epoch of a name given to two holders.
type DoubleGrant struct{ A, B Grant }

func (d DoubleGrant) String() string {
	f := func(g Grant) string {
		how := "given"
		switch {
		case g.Warned:
			how = "given with the cancelled-wait warning"
		case g.Unknown:
			how = "given (COMMIT's outcome unknown, then shown by inspect)"
		}
		when := "before"
		if g.After {
			when = "after"
		}
		return fmt.Sprintf("%s %s, %s the fault", g.Owner, how, when)
	}
	return fmt.Sprintf("%s epoch %d: %s; %s", d.A.Name, d.A.Epoch, f(d.A), f(d.B))
}

// doubleGrants finds every (name, epoch) given to more than one holder.
func doubleGrants(gs []Grant) []DoubleGrant {
	first := map[string]Grant{}
	var out []DoubleGrant
	for _, g := range gs {
		if !g.Given {
			continue
		}
		k := fmt.Sprintf("%s/%d", g.Name, g.Epoch)
		if f, ok := first[k]; !ok {
			first[k] = g
		} else if f.Owner != g.Owner {
			out = append(out, DoubleGrant{f, g})
		}
	}
	slices.SortFunc(out, func(a, b DoubleGrant) int { return strings.Compare(a.String(), b.String()) })
	return out
}

var errNoTraffic = errors.New("no traffic")

func connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return pgx.Connect(cctx, dsn)
}
