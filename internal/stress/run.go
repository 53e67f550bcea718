package stress

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pglease/pglease-gen/internal/leaseclient"
)

// Config shapes a run.
type Config struct {
	DSN      string
	Clients  int
	Names    int
	Duration time.Duration
	Seed     uint64
	Prefix   string // names are Prefix + n; a fresh prefix keeps runs apart
	MinTTL   time.Duration
	MaxTTL   time.Duration
	MaxWait  time.Duration // longest max_wait of a blocking acquire
	// Fencing adds guarded transactions (lease.guard, a write, a commit)
	// and lease.purge calls (pg_lease 0.2.0 and later).
	Fencing bool
	// Pooled: DSN is a pooler in transaction pooling, which keeps no
	// session state; the client sets none (the pooler's server connections
	// carry StatementTimeout).
	Pooled bool
	// Reconnect: a call whose connection fails is recorded with an unknown
	// outcome and the client reconnects (for fault injection); otherwise a
	// failed connection ends the run with an error.
	Reconnect bool
}

// Defaults fills the zero fields.
func (c Config) Defaults() Config {
	if c.Clients == 0 {
		c.Clients = 8
	}
	if c.Names == 0 {
		c.Names = 4
	}
	if c.Duration == 0 {
		c.Duration = 5 * time.Second
	}
	if c.MinTTL == 0 {
		c.MinTTL = 2 * time.Millisecond
	}
	if c.MaxTTL == 0 {
		c.MaxTTL = 2 * time.Second
	}
	if c.MaxWait == 0 {
		c.MaxWait = 1500 * time.Millisecond
	}
	if c.Prefix == "" {
		c.Prefix = fmt.Sprintf("s%d-", time.Now().UnixNano())
	}
	return c
}

// Run runs the clients for the configured time and returns the history.
// Each client is one connection and one owner; it remembers the tokens it
// was given and mostly uses them, sometimes a stale or made-up one.
func Run(ctx context.Context, cfg Config) ([]Op, error) {
	cfg = cfg.Defaults()
	var (
		mu      sync.Mutex
		history []Op
		wg      sync.WaitGroup
		errs    = make(chan error, cfg.Clients)
	)
	// every client connects before any starts, so that a failed connect
	// ends the run with nothing running and nothing recorded
	conns := make([]*pgx.Conn, cfg.Clients)
	for i := range conns {
		conn, err := connect(ctx, cfg, time.Time{})
		if err != nil {
			for _, c := range conns[:i] {
				c.Close(context.Background())
			}
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		conns[i] = conn
	}
	if cfg.Fencing {
		if _, err := conns[0].Exec(ctx, "CREATE TABLE IF NOT EXISTS "+FencedTable+
			" (name text, client int, seq int, epoch bigint NOT NULL, PRIMARY KEY (name, client, seq))"); err != nil {
			for _, c := range conns {
				c.Close(context.Background())
			}
			return nil, fmt.Errorf("create %s: %w", FencedTable, err)
		}
	}
	deadline := time.Now().Add(cfg.Duration)
	for i, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &client{id: i, conn: conn, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(i))), tokens: map[string]int64{}, expires: map[string]time.Time{}}
			defer func() { cl.conn.Close(context.Background()) }()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				op, err := cl.step(ctx)
				if op.Kind != "" {
					mu.Lock()
					op.ID = len(history)
					history = append(history, op)
					mu.Unlock()
				}
				if err == nil {
					continue
				}
				if !cfg.Reconnect {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				cl.conn.Close(context.Background())
				if cl.conn, err = connect(ctx, cfg, deadline.Add(time.Minute)); err != nil {
					errs <- fmt.Errorf("client %d: reconnect: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return history, errors.Join(collect(errs)...)
}

// StatementTimeout bounds every call of a run, so that a wait that never
// ends (a bug) cannot hang it.
func (c Config) StatementTimeout() time.Duration { return c.MaxWait + WaitOvershoot + 2*time.Second }

// connect opens a client connection, retrying until retryUntil while the
// server is away (restarting after a crash).
func connect(ctx context.Context, cfg Config, retryUntil time.Time) (*pgx.Conn, error) {
	for {
		conn, err := pgx.Connect(ctx, cfg.DSN)
		if err == nil && !cfg.Pooled {
			// a wait that never ends (a bug) must not hang the run
			_, err = conn.Exec(ctx, fmt.Sprintf("SET statement_timeout = %d", cfg.StatementTimeout().Milliseconds()))
			if err != nil {
				conn.Close(ctx)
			}
		}
		if err == nil {
			return conn, nil
		}
		if time.Now().After(retryUntil) || ctx.Err() != nil {
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func collect(ch chan error) []error {
	var out []error
	for e := range ch {
		out = append(out, e)
	}
	return out
}

type client struct {
	id     int
	seq    int
	conn   *pgx.Conn
	cfg    Config
	rng    *rand.Rand
	tokens map[string]int64 // name -> epoch this client was last given
	// expires: name -> the expiry of the lease this client holds or held
	// until it lapsed (not released by it, not seen held by another)
	expires map[string]time.Time
}

func (c *client) owner() string { return fmt.Sprintf("client-%d", c.id) }

// ttl is log-uniform between MinTTL and MaxTTL, so short and long leases
// are both common.
func (c *client) ttl() time.Duration {
	lo, hi := math.Log(float64(c.cfg.MinTTL)), math.Log(float64(c.cfg.MaxTTL))
	return time.Duration(math.Exp(lo + c.rng.Float64()*(hi-lo))).Round(time.Microsecond)
}

func (c *client) step(ctx context.Context) (Op, error) {
	name := fmt.Sprintf("%s%d", c.cfg.Prefix, c.rng.IntN(c.cfg.Names))
	c.seq++
	op := Op{Client: c.id, Seq: c.seq, Name: name, Owner: c.owner()}
	epoch, have := c.tokens[name]
	if !have || c.rng.IntN(10) == 0 {
		epoch = int64(1 + c.rng.IntN(8)) // stale or made up
	}
	r := c.rng.IntN(100)
	if c.cfg.Fencing && c.rng.IntN(100) < 15 {
		r = -1
	}
	switch {
	case r < 0 && c.rng.IntN(5) == 0:
		op.Kind, op.Name, op.Owner = Purge, "", ""
		op.Grace = time.Duration(c.rng.IntN(50)) * time.Millisecond
	case r < 0:
		op.Kind, op.Epoch = Guard, epoch
		op.Hold = time.Duration(c.rng.IntN(20)) * time.Millisecond
		if held := slices.Sorted(maps.Keys(c.expires)); len(held) > 0 && c.rng.IntN(2) == 0 {
			// half the guards are a holder's, of a name it holds or held
			// until it lapsed, mostly the latter (the others mostly meet
			// another owner, and a lapsed lease is soon taken over)
			var lapsed []string
			for _, n := range held {
				if time.Now().After(c.expires[n]) {
					lapsed = append(lapsed, n)
				}
			}
			if len(lapsed) > 0 && c.rng.IntN(4) > 0 {
				held = lapsed
			}
			op.Name = held[c.rng.IntN(len(held))]
			op.Epoch = c.tokens[op.Name]
		}
	case r < 30:
		op.Kind, op.TTL = Acquire, c.ttl()
		if c.rng.IntN(3) == 0 {
			op.MaxWait = time.Duration(c.rng.Int64N(int64(c.cfg.MaxWait))).Round(time.Millisecond) + time.Millisecond
		}
	case r < 35:
		// an acquire in a transaction that is rolled back
		op.Kind, op.TTL, op.RolledBack = Acquire, c.ttl(), true
	case r < 60:
		op.Kind, op.Epoch, op.TTL = Renew, epoch, c.ttl()
	case r < 80:
		op.Kind, op.Epoch = Release, epoch
	default:
		op.Kind = Inspect
	}
	err := c.call(ctx, &op)
	if err != nil {
		delete(c.tokens, name) // whatever happened, this client does not know
		delete(c.expires, name)
		return op, err
	}
	if op.Kind == Acquire && op.Acquired && !op.RolledBack && op.Err == "" && op.RetEpoch != nil {
		c.tokens[name] = *op.RetEpoch
		if op.Expires != nil {
			c.expires[name] = *op.Expires
		}
	}
	switch {
	case op.Kind == Renew && op.Status == "ok" && op.Expires != nil && op.Epoch == c.tokens[name]:
		c.expires[name] = *op.Expires
	case op.Kind == Release && op.Epoch == c.tokens[name], op.Kind == Acquire && !op.Acquired:
		delete(c.expires, name) // given up, or another holds it
	}
	return op, nil
}

// call runs the operation and records its outcome. A SQL error is an
// outcome; a broken connection is returned as an error.
func (c *client) call(ctx context.Context, op *Op) error {
	var wait any
	if op.MaxWait > 0 {
		wait = op.MaxWait
	}
	acquire := func() error {
		g, err := leaseclient.Acquire(ctx, c.conn, op.Name, op.Owner, op.TTL, wait)
		op.Acquired, op.RetEpoch, op.Expires = g.Acquired, g.Epoch, g.Expires
		return err
	}
	op.Start = time.Now()
	var err error
	if op.RolledBack {
		if _, err = c.conn.Exec(ctx, "BEGIN"); err == nil {
			err = acquire()
			if _, rerr := c.conn.Exec(ctx, "ROLLBACK"); rerr != nil && err == nil {
				err = rerr
			}
		}
	} else {
		switch op.Kind {
		case Acquire:
			err = acquire()
		case Renew:
			var r leaseclient.Renewal
			r, err = leaseclient.Renew(ctx, c.conn, op.Name, op.Owner, op.Epoch, op.TTL)
			op.Status, op.Expires = r.Status, r.Expires
		case Release:
			op.Status, err = leaseclient.Release(ctx, c.conn, op.Name, op.Owner, op.Epoch)
		case Guard:
			err = c.guard(ctx, op)
		case Purge:
			op.Purged, err = leaseclient.Purge(ctx, c.conn, op.Grace)
		case Inspect:
			var st leaseclient.State
			st, err = leaseclient.Inspect(ctx, c.conn, op.Name)
			op.Held, op.RetOwner, op.RetEpoch, op.Expires = st.Held, st.Owner, st.Epoch, st.Expires
		}
	}
	op.End = time.Now()
	var pe *pgconn.PgError
	switch {
	case err == nil:
	case errors.As(err, &pe) && !lost(pe):
		op.Err, op.ErrMsg = pe.Code, pe.Message
		if op.Kind == Guard && pe.Code == "55000" {
			op.Status = pe.Detail
		}
		if op.RolledBack {
			c.conn.Exec(ctx, "ROLLBACK")
		}
	default:
		op.Unknown, op.ErrMsg = true, err.Error()
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// guard runs a guarded transaction: the guard, Hold of other work, the
// write into FencedTable, the commit (CommitAt is when it was sent). A
// failed guard rolls back.
func (c *client) guard(ctx context.Context, op *Op) (err error) {
	tx, err := c.conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback(ctx)
		}
	}()
	exp, err := leaseclient.Guard(ctx, tx, op.Name, op.Owner, op.Epoch)
	if err != nil {
		return err
	}
	op.Expires = &exp
	if op.Hold > 0 {
		if _, err := tx.Exec(ctx, "SELECT pg_sleep($1)", op.Hold.Seconds()); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+FencedTable+" (name, client, seq, epoch) VALUES ($1, $2, $3, $4)", op.Name, op.Client, op.Seq, op.Epoch); err != nil {
		return err
	}
	op.CommitAt = time.Now()
	return tx.Commit(ctx)
}

// Writes marks the guard calls of ops whose write is in FencedTable.
func Writes(ctx context.Context, dsn, prefix string, ops []Op) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT name, client, seq FROM "+FencedTable+" WHERE starts_with(name, $1)", prefix)
	if err != nil {
		return err
	}
	type key struct {
		name        string
		client, seq int
	}
	written := map[key]bool{}
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.name, &k.client, &k.seq); err != nil {
			return err
		}
		written[k] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i, o := range ops {
		if o.Kind == Guard {
			ops[i].Written = written[key{o.Name, o.Client, o.Seq}]
		}
	}
	return nil
}

// lost reports errors after which the call's outcome is unknown: the
// connection was terminated (by an administrator, a crash or a shutdown).
func lost(pe *pgconn.PgError) bool {
	return pe.Severity == "FATAL" || pe.Severity == "PANIC" || strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "08")
}

// Table reads lease.leases for the names of a run.
func Table(ctx context.Context, dsn, prefix string) (map[string]Row, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT name, owner, epoch, expires_at FROM lease.leases WHERE starts_with(name, $1)", prefix)
	if err != nil {
		return nil, err
	}
	out := map[string]Row{}
	for rows.Next() {
		var name string
		var r Row
		if err := rows.Scan(&name, &r.Owner, &r.Epoch, &r.Expires); err != nil {
			return nil, err
		}
		out[name] = r
	}
	return out, rows.Err()
}
