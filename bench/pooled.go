package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pglease/pglease-gen/internal/leaseclient"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

// Pooled is the run through PgBouncer in transaction pooling: what each
// system does there, and what became of advisory locks.
type Pooled struct {
	Clients, Pool int
	Results       []Result
	Advisory      AdvisoryFailures
}

// AdvisoryFailures are the advisory-lock cycles that went wrong through
// the pooler: a lock taken on one server connection and unlocked by the
// same client from another, where it is not held.
type AdvisoryFailures struct {
	Cycles, FailedUnlocks, RefusedLocks int64
	LeftHeld                            int // advisory locks still held once every client stopped
}

// pooledNames: 1,024 names for 64 clients doing cycles (each client on
// its own share), and more for renews (ten each from the 500th).
func pooledNames() []string {
	names := make([]string, 1200)
	for i := range names {
		names[i] = fmt.Sprintf("pool-%04d", i)
	}
	return names
}

// pooledRun measures pg_lease, the floor and advisory locks with clients
// clients through a pooler of pool server connections in front of s, at
// the server's default durability (synchronous_commit on: through a
// transaction pooler a session SET would not stay with the client).
func pooledRun(ctx context.Context, s *benchServer, clients, pool int, phase time.Duration) (Pooled, error) {
	p := Pooled{Clients: clients, Pool: pool}
	names := pooledNames()
	// a database of its own, so that its names stay out of the others' tables
	if err := pgserver.Exec(ctx, s.DSN(), "DROP DATABASE IF EXISTS pooled_bench"); err != nil {
		return p, err
	}
	if err := pgserver.Exec(ctx, s.DSN(), "CREATE DATABASE pooled_bench"); err != nil {
		return p, err
	}
	db := strings.Replace(s.DSN(), "dbname=postgres", "dbname=pooled_bench", 1)
	if err := pgserver.Exec(ctx, db, leaseclient.CreateSQL+"; "+floorSchema+
		"; INSERT INTO floor_leases (name) SELECT format('pool-%s', lpad(g::text, 4, '0')) FROM generate_series(0, 1199) g"); err != nil {
		return p, err
	}
	b, err := s.srv.StartPgBouncer(pool, "")
	if err != nil {
		return p, err
	}
	defer b.Stop()
	dsn := b.DSN("pooled_bench", s.srv.User)
	sys := func(name string, wrap func(pgLease) Client) System {
		return System{Name: name, Durable: "sync on", Connect: func(ctx context.Context) (Client, error) {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				return nil, err
			}
			return wrap(pgLease{conn: conn}), nil // no backend of its own: no pid
		}}
	}
	lease := sys("pg_lease", func(p pgLease) Client { return &p })
	fl := sys("floor", func(p pgLease) Client { return &floor{p} })
	adv := sys("advisory lock", func(p pgLease) Client { return &advisory{p} })
	for _, x := range []System{lease, fl} {
		r, err := cycles(ctx, x, names[:1024], clients, phase)
		if err != nil {
			return p, fmt.Errorf("%s through the pooler: %w", x.Name, err)
		}
		say("pooled %s", r)
		p.Results = append(p.Results, r)
	}
	for _, x := range []System{lease, fl} {
		r, err := renews(ctx, x, names, clients, phase)
		if err != nil {
			return p, fmt.Errorf("%s through the pooler: %w", x.Name, err)
		}
		say("pooled %s", r)
		p.Results = append(p.Results, r)
	}
	r, err := advisoryCycles(ctx, adv, names[:1024], clients, phase, &p.Advisory)
	if err != nil {
		return p, err
	}
	say("pooled %s", r)
	p.Results = append(p.Results, r)
	// what the server connections still hold, now that no client runs
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return p, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted").Scan(&p.Advisory.LeftHeld)
	return p, err
}

// advisoryCycles: lock and unlock, as cycles does, but counting what goes
// wrong instead of stopping: behind a transaction pooler the unlock may run
// on another server connection than the lock (it fails, and the lock stays
// where it was taken), and a later lock of the name then is refused.
func advisoryCycles(ctx context.Context, s System, names []string, clients int, d time.Duration, f *AdvisoryFailures) (Result, error) {
	var failedUnlocks, refused, ok atomic.Int64
	r, err := parallel(ctx, s, clients, d, nil, func(c Client, i, n int) (bool, error) {
		name := names[(i+n*clients)%len(names)]
		_, got, err := c.Acquire(ctx, name, "", 0)
		if err != nil {
			return false, err
		}
		if !got {
			refused.Add(1)
			return false, nil
		}
		released, err := c.Release(ctx, name, "", 1)
		if err != nil {
			return false, err
		}
		if !released {
			failedUnlocks.Add(1)
			return false, nil
		}
		ok.Add(1)
		return true, nil
	})
	r.Workload = "cycle"
	f.Cycles, f.FailedUnlocks, f.RefusedLocks = ok.Load(), failedUnlocks.Load(), refused.Load()
	return r, err
}

// pooledSection reports the pooled run.
func pooledSection(p Pooled) string {
	if len(p.Results) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Through PgBouncer: %d clients, transaction pooling on %d server connections (sync on)\n\n", p.Clients, p.Pool)
	b.WriteString("| workload | system | ops/s | p50 | p99 | / floor |\n|---|---|---:|---:|---:|---:|\n")
	for _, r := range p.Results {
		ratio := ""
		if f, ok := floorOf(p.Results, r); ok && f.PerSec() > 0 {
			ratio = fmt.Sprintf("%.2f", r.PerSec()/f.PerSec())
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s |\n", r.Workload, r.System, r.PerSec(), ms(r.Pct(0.5)), ms(r.Pct(0.99)), ratio)
	}
	a := p.Advisory
	fmt.Fprintf(&b, "\nAdvisory locks through the pooler: of the cycles tried, %d completed, %d unlocks failed (`pg_advisory_unlock` returned false: the client's transaction ran on another server connection than its lock, which stays there), %d locks were refused (a lock left behind on a name), and %d advisory locks were still held when every client had stopped, by server connections no client has. pg_lease keeps its state in a table and holds nothing in the session: through the same pooler every call did what it does directly.\n\n",
		a.Cycles, a.FailedUnlocks, a.RefusedLocks, a.LeftHeld)
	return b.String()
}
