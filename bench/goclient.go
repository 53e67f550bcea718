package main

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/lease"
)

// goClientSystem is pg_lease through the Go client (module lease), its
// sessions at synchronous_commit = sync.
func goClientSystem(dsn, sync string) System {
	dsn += " options='-c synchronous_commit=" + sync + "'"
	return System{Name: "pg_lease, Go client", Durable: "sync " + sync, Connect: func(ctx context.Context) (Client, error) {
		app := "bench-go-client-" + strconv.FormatUint(goClients.Add(1), 10)
		return &goClient{base: dsn, app: app}, nil
	}}
}

// bareSystem is the Go client's baseline: on one pgx connection at
// synchronous_commit = sync, the statements the client sends for an
// acquire and a release, with the same arguments, so that -only client
// and client-ir compare the client's own work and nothing else.
func bareSystem(dsn, sync string) System {
	return System{Name: "pg_lease, bare SQL", Durable: "sync " + sync, Connect: func(ctx context.Context) (Client, error) {
		conn, pid, err := pgConnect(ctx, dsn, sync)
		if err != nil {
			return nil, err
		}
		return &bareLease{pgLease{conn: conn, pid: pid}}, nil
	}}
}

// bareLease acquires as the Go client does (its release is already the
// client's statement).
type bareLease struct{ pgLease }

func (b *bareLease) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	var acquired bool
	var epoch *int64
	err := b.conn.QueryRow(ctx, "SELECT acquired, epoch FROM lease.acquire($1, $2, $3::interval)", name, owner, ttl).Scan(&acquired, &epoch)
	if err != nil || !acquired || epoch == nil {
		return 0, false, err
	}
	return *epoch, true, nil
}

// goClient is pg_lease through the Go client: a waiting acquire waits on
// the client side (the client watches the name), woken by the
// notification that release sends.
type goClient struct {
	base string // the connection string, without the application_name
	app  string // its connections' application_name
	mu   sync.Mutex
	c    *lease.Client
	held map[string]*lease.Lease
}

func (g *goClient) client(ttl time.Duration) (*lease.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.c == nil {
		// an owner as short as the bare SQL's ("w0" to "w7"), so that the
		// comparison is of the client, not of the default owner's length
		// (hostname:pid); the client adds its suffix to it
		c, err := lease.New(g.base+" application_name="+g.app, lease.Config{TTL: ttl, Owner: "w"})
		if err != nil {
			return nil, err
		}
		g.c, g.held = c, map[string]*lease.Lease{}
	}
	return g.c, nil
}

func (g *goClient) keep(l *lease.Lease) (int64, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held[l.Name] = l
	return l.Epoch, true, nil
}

func (g *goClient) Acquire(ctx context.Context, name, _ string, ttl time.Duration) (int64, bool, error) {
	c, err := g.client(ttl)
	if err != nil {
		return 0, false, err
	}
	l, err := c.TryAcquire(ctx, name)
	if errors.Is(err, lease.ErrNotAcquired) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return g.keep(l)
}

func (g *goClient) AcquireWait(ctx context.Context, name, _ string, ttl, wait time.Duration) (int64, bool, error) {
	c, err := g.client(ttl)
	if err != nil {
		return 0, false, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	l, err := c.Acquire(wctx, name)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return g.keep(l)
}

func (g *goClient) Renew(_ context.Context, name, _ string, token int64, _ time.Duration) (bool, error) {
	g.mu.Lock()
	l := g.held[name]
	g.mu.Unlock()
	return l != nil && l.Epoch == token && l.Err() == nil, nil
}

func (g *goClient) Release(ctx context.Context, name, _ string, token int64) (bool, error) {
	g.mu.Lock()
	l := g.held[name]
	delete(g.held, name)
	g.mu.Unlock()
	if l == nil || l.Epoch != token {
		return false, nil
	}
	return true, l.Release(ctx)
}

func (g *goClient) BackendPID() int { return 0 } // the wait is in this process

// goClients numbers the clients, for their application_name.
var goClients atomic.Uint64

// serverPIDs are the server processes of the client's connections (the
// client opens its own: calls, renewals, notifications), for the server
// CPU its workload costs.
func (g *goClient) serverPIDs(ctx context.Context) []int {
	conn, err := pgx.Connect(ctx, g.base)
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", g.app)
	if err != nil {
		return nil
	}
	pids, _ := pgx.CollectRows(rows, pgx.RowTo[int])
	return pids
}
func (g *goClient) Close() {
	if g.c != nil {
		g.c.Close()
	}
}
