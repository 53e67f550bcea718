package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/leaseclient"
)

// guardRuns counts guardedWrites' runs.
var guardRuns atomic.Int64

// protectedSchema is the table guarded writes change: the data a lease
// protects.
const protectedSchema = `CREATE TABLE IF NOT EXISTS protected (id int PRIMARY KEY, v bigint NOT NULL DEFAULT 0);
INSERT INTO protected (id) SELECT g FROM generate_series(0, 999) g ON CONFLICT DO NOTHING`

// connOf is the connection of a PostgreSQL client.
func connOf(c Client) *pgx.Conn {
	switch c := c.(type) {
	case *pgLease:
		return c.conn
	case *floor:
		return c.conn
	}
	panic(fmt.Sprintf("connOf: %T is not a PostgreSQL client", c))
}

// guardedWrites: each client holds one lease and updates rows it protects.
// On the pg_lease system every UPDATE is fenced: lease.guard and the
// UPDATE in one transaction (sent together, one round trip); on the floor
// it is the same UPDATE alone.
func guardedWrites(ctx context.Context, s System, clients int, d time.Duration) (Result, error) {
	guard := s.Name == "pg_lease"
	// names of this run's own: an acquire by the holder of a name it
	// still holds from an earlier run is idempotent and keeps that
	// grant's expiry (0.5.0's default maximum is a minute, shorter than
	// the rounds of a headline)
	prefix := fmt.Sprintf("guarded-%d-", guardRuns.Add(1))
	epochs := make([]int64, clients)
	r, err := parallel(ctx, s, clients, d, func(c Client, i int) error {
		if !guard {
			return nil
		}
		g, err := leaseclient.Acquire(ctx, connOf(c), prefix+strconv.Itoa(i), "g"+strconv.Itoa(i), time.Minute, nil) // (0.5.0 grants at most a minute by default)
		if err != nil || !g.Acquired {
			return errOr(err, "acquire of %s%d failed", prefix, i)
		}
		epochs[i] = *g.Epoch
		return nil
	}, func(c Client, i, n int) (bool, error) {
		conn := connOf(c)
		id := i*100 + n%100
		if !guard {
			_, err := conn.Exec(ctx, "UPDATE protected SET v = v + 1 WHERE id = $1", id)
			return err == nil, err
		}
		var b pgx.Batch
		b.Queue("SELECT lease.guard($1, $2, $3)", prefix+strconv.Itoa(i), "g"+strconv.Itoa(i), epochs[i])
		b.Queue("UPDATE protected SET v = v + 1 WHERE id = $1", id)
		err := conn.SendBatch(ctx, &b).Close()
		return err == nil, err
	})
	r.Workload = "guarded"
	return r, err
}

// PurgeRun is lease.purge on a table of released and lapsed names.
type PurgeRun struct {
	Version                            string // the server's
	Rows                               int
	Deleted                            int64
	Took                               time.Duration
	TableBefore, IndexBefore           int64
	TableAfter, IndexAfter             int64 // after the purge
	TableAfterVacuum, IndexAfterVacuum int64 // and a VACUUM
}

// purgeRun fills a database of its own with rows names, half released and
// half lapsed an hour ago, and times one lease.purge() of them all.
func purgeRun(ctx context.Context, s *benchServer, rows int) (PurgeRun, error) {
	p := PurgeRun{Version: s.Version, Rows: rows}
	admin, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return p, err
	}
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS purge_bench")
	if err == nil {
		_, err = admin.Exec(ctx, "CREATE DATABASE purge_bench")
	}
	admin.Close(ctx)
	if err != nil {
		return p, err
	}
	conn, err := pgx.Connect(ctx, strings.Replace(s.DSN(), "dbname=postgres", "dbname=purge_bench", 1))
	if err != nil {
		return p, err
	}
	defer conn.Close(ctx)
	sizes := func(table, index *int64) error {
		return conn.QueryRow(ctx, "SELECT pg_table_size('lease.leases'), pg_relation_size('lease.leases_pkey')").Scan(table, index)
	}
	if _, err := conn.Exec(ctx, leaseclient.CreateSQL); err != nil {
		return p, err
	}
	// as the superuser, straight into the table: what a million acquires
	// and releases (and as many leases left to lapse) leave behind
	if _, err := conn.Exec(ctx, `INSERT INTO lease.leases (name, owner, epoch, expires_at)
		SELECT format('job-%s', g), CASE WHEN g % 2 = 1 THEN format('w%s', g % 64) END, 1 + g % 7,
		       CASE WHEN g % 2 = 1 THEN clock_timestamp() - interval '1 hour' END
		  FROM generate_series(1, $1) g`, rows); err != nil {
		return p, err
	}
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE lease.leases"); err != nil {
		return p, err
	}
	if err := sizes(&p.TableBefore, &p.IndexBefore); err != nil {
		return p, err
	}
	start := time.Now()
	if err := conn.QueryRow(ctx, "SELECT lease.purge()").Scan(&p.Deleted); err != nil {
		return p, err
	}
	p.Took = time.Since(start)
	if err := sizes(&p.TableAfter, &p.IndexAfter); err != nil {
		return p, err
	}
	if _, err := conn.Exec(ctx, "VACUUM lease.leases"); err != nil {
		return p, err
	}
	if err := sizes(&p.TableAfterVacuum, &p.IndexAfterVacuum); err != nil {
		return p, err
	}
	return p, nil
}

func (p PurgeRun) String() string {
	return fmt.Sprintf("purge of %d names: %d deleted in %s (%.0f rows/s)", p.Rows, p.Deleted, p.Took.Round(time.Millisecond), float64(p.Deleted)/p.Took.Seconds())
}

// purgeSection reports the purge.
func purgeSection(p PurgeRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Purge: %d names, half released and half lapsed an hour ago (PostgreSQL %s)\n\n", p.Rows, p.Version)
	fmt.Fprintf(&b, "`SELECT lease.purge()` deleted %d rows in %s: **%.0f rows/s**.\n\n", p.Deleted, p.Took.Round(time.Millisecond), float64(p.Deleted)/p.Took.Seconds())
	mb := func(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }
	b.WriteString("| | table | index |\n|---|---:|---:|\n")
	fmt.Fprintf(&b, "| before | %s | %s |\n| after the purge | %s | %s |\n| after VACUUM | %s | %s |\n\n",
		mb(p.TableBefore), mb(p.IndexBefore), mb(p.TableAfter), mb(p.IndexAfter), mb(p.TableAfterVacuum), mb(p.IndexAfterVacuum))
	b.WriteString("VACUUM gives the table's emptied pages back to the file system (they are all at its end); the index keeps its pages, empty and reusable, as B-tree indexes do (REINDEX would shrink it).\n\n")
	return b.String()
}
