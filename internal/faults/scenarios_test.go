package faults

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/pgtest"
)

// A Variant is the extension a run installs: the newest as shipped, an
// older release, or the newest with one of its parts taken away, to show
// that the scenario that needs that part finds double grants without it.
type Variant struct {
	Name string
	// Create is the CREATE EXTENSION statement.
	Create string
	// Settings are run on each client connection (after the scenario's).
	Settings []string
	// Database are settings of the database (ALTER DATABASE ... SET),
	// which is where 0.4.0 takes a lowered floor from.
	Database []string
	// Extension is the name of a copy installed with Edits applied to
	// the newest install script ("" for pg_lease itself).
	Extension string
	Edits     []pgtest.Edit
	// Client: the clients go through the Go client package (lease)
	// instead of calling the functions themselves.
	Client bool
	// Grace is how long 0.5.0's grace lasts after a fault (the maximum TTL
	// the variant sets, plus 1%): the run goes on that much longer after
	// it, so that the server that took over grants to new holders too.
	Grace time.Duration
}

// Variants: the shipped 0.5.0 (its grace as long as the workload's TTLs); 0.2.0; 0.3.0 with its floor lowered by the
// session (0.3.0 allowed that: the crash restart and the restore in place
// it missed); 0.5.0 without its durability floor (lowered for the database,
// as 0.4.0 allows), which may lose acknowledged grants but must still give
// none twice; and 0.5.0 without eras (every grant in one band that never
// changes).
var (
	// (0.5.0's grace after a fault lasts as long as the longest TTL it may
	// have granted: the workload's TTLs are at most 450 ms, and the run
	// goes on for the grace after the fault, so that the server that took
	// over grants to new holders too; TestHoldersNeverOverlap in
	// internal/safety shows what the grace is for)
	Shipped   = Variant{Name: model.PgLease.Version(), Create: "CREATE EXTENSION pg_lease" + shortMax, Grace: shortGrace}
	V020      = Variant{Name: "0.2.0", Create: "CREATE EXTENSION pg_lease VERSION '0.2.0'"}
	V030      = Variant{Name: "0.3.0", Create: "CREATE EXTENSION pg_lease VERSION '0.3.0'"}
	V030Floor = Variant{Name: "0.3.0 at session", Create: "CREATE EXTENSION pg_lease VERSION '0.3.0'",
		Settings: []string{"SET lease.synchronous_commit = session"}}
	NoFloor = Variant{Name: "0.5.0 without the floor", Create: "CREATE EXTENSION pg_lease" + shortMax, Grace: shortGrace,
		Database: []string{"lease.synchronous_commit = session"}}
	// ThroughClient is the shipped 0.5.0 with the clients going through
	// the Go client: the leases it reports must be given ones.
	// (its TTL is the client's shortest, 1 s)
	ThroughClient = Variant{Name: "0.5.0 through the client", Create: "CREATE EXTENSION pg_lease; SELECT lease.set_max_ttl(interval '1 second')",
		Grace: 1010 * time.Millisecond, Client: true}
	NoEras = Variant{Name: "0.5.0 without eras", Create: "CREATE EXTENSION pg_lease_noeras" + shortMax, Grace: shortGrace, Extension: "pg_lease_noeras",
		// (the statements that join era_now as "AS c", acquire's and
		// era_first()'s and era_last()'s, not enter_era's, and the band
		// acquire's other statements were planned with)
		Edits: []pgtest.Edit{{Old: "FROM @extschema@.era_now AS c\n", Times: 14,
			// (a row for each database: the statements keep their own)
			New: "FROM (SELECT pg_catalog.pg_postmaster_start_time() AS boot, 1::bigint AS first_epoch, 9223372036854775807::bigint AS last_epoch, " +
				"d.oid AS database_oid, NULL::timestamptz AS grace_until FROM pg_catalog.pg_database AS d) AS c\n"},
			{Old: "@extschema@.era_first(@extschema@.era_mark())", New: "1::bigint", Times: 14},
			{Old: "@extschema@.era_grace(@extschema@.era_mark())", New: "NULL::timestamptz", Times: 12},
			{Old: "@extschema@.era_last(@extschema@.era_mark())", New: "9223372036854775807::bigint", Times: 6}}}
)

// shortMax sets 0.5.0's maximum TTL to the workload's longest TTL (see
// Shipped), shortGrace is the grace it makes.
const (
	shortMax   = "; SELECT lease.set_max_ttl(interval '500 milliseconds')"
	shortGrace = 505 * time.Millisecond
)

// A Scenario is one fault in the middle of a run.
type Scenario struct {
	Name string
	What string
	// Settings of the sessions (synchronous_commit = off, say).
	Sessions []string
	// SyncStandby names the primary's synchronous standby (s1), set with
	// ALTER SYSTEM once the standby runs (not on the standby, nor on the
	// server a promotion makes of it); the clients start once every
	// commit waits for it.
	SyncStandby string
	// Standby: the primary gets a streaming standby named s1.
	Standby bool
	// Server are settings the primary starts with (wal_level, say).
	Server []string
	// HA: the primary (and the standby) are run by Patroni, with etcd,
	// on loopback, instead of by the test.
	HA bool
	// Long: left out of -faults.short (make test's share).
	Long bool
	// Client: also run with ThroughClient (in -faults.short only in
	// split-brain: shortClient).
	Client bool
	// Fault injects the fault into the environment and moves the clients.
	Fault func(ctx context.Context, e *env) error
	// Needs are the variants that must show double grants here; Loses,
	// those that must lose an acknowledged grant (the scenario's Fault
	// counts them with e.lost).
	Needs, Loses []Variant
}

// env is a run's servers and client groups.
type env struct {
	dir     string // the run's own temporary directory
	primary *pgserver.Server
	standby *pgserver.Server
	servers []*pgserver.Server // everything to remove at the end
	groups  []*target          // two groups of clients
	w       *workload
	lostN   int  // acknowledged grants the surviving server lacks
	counted bool // lostN was counted
	variant Variant
	say     func(string, ...any)
	takers  []taker // the servers that took clients over at the fault
	ha      *pgserver.HACluster
}

// A taker is a server (a DSN, and the move of a group to it) that took
// clients over: it must give them grants, counted on it alone.
type taker struct {
	dsn string
	gen int64
}

func (e *env) moveAll(s *pgserver.Server) {
	for _, g := range e.groups {
		e.move(g, s.DSN(db))
	}
}

// move sends group g to dsn; after the fault began, the server there is
// one that took clients over.
func (e *env) move(g *target, dsn string) {
	gen := g.set(dsn)
	if e.w != nil && e.w.fault.Load() {
		e.takers = append(e.takers, taker{dsn, gen})
	}
}

const db = "faults"

// killThen kills the primary, holds the clients off, brings up the
// server that goes on (next), counts the acknowledged grants it lacks and
// moves every client to it.
func (e *env) killThen(ctx context.Context, next func() (*pgserver.Server, error)) error {
	return e.crashThen(ctx, e.primary.Kill, next)
}

// crashThen is killThen with another way to crash (kill).
func (e *env) crashThen(ctx context.Context, kill func() error, next func() (*pgserver.Server, error)) error {
	// the sessions' commits at synchronous_commit = off of the last
	// 300 ms stay unflushed, and unsent (a walsender sends flushed WAL
	// only): without the floor, these are the acknowledged grants lost
	if _, err := e.primary.PauseWALWriter(ctx); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	if err := kill(); err != nil {
		return err
	}
	e.hold()
	e.w.mu.Lock()
	acked := len(e.w.grants) // every grant recorded so far came back before the kill
	e.w.mu.Unlock()
	s, err := next()
	if err != nil {
		return err
	}
	if err := e.lost(ctx, s, acked); err != nil {
		return err
	}
	e.moveAll(s)
	return nil
}

// patroniFailover loses the primary's node (its Patroni and server
// killed together), waits for Patroni to promote the other node and moves
// the clients there.
func (e *env) patroniFailover(ctx context.Context) error {
	lost, next := e.ha.Nodes[0], e.ha.Nodes[1]
	start := time.Now()
	if err := e.crashThen(ctx, lost.Lose, func() (*pgserver.Server, error) { return next.Server, next.WaitPrimary(ctx) }); err != nil {
		return err
	}
	e.say("Patroni promoted %s %.1f s after the loss", next.Name, time.Since(start).Seconds())
	return nil
}

// hold keeps every client from connecting until the clients are moved.
func (e *env) hold() {
	for _, g := range e.groups {
		g.set("host=/nonexistent-pglease-hold")
	}
}

// killBackend kills one backend of the primary with SIGKILL (what the
// OOM killer does): the postmaster stays up, ends every other backend and
// runs crash recovery; killBackend waits until it answers again. The
// clients are held off first, so that none reaches the server again before
// the lost grants are counted.
func (e *env) killBackend(ctx context.Context) error {
	e.hold()
	conn, err := connect(ctx, e.primary.DSN(db))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return fmt.Errorf("a backend to kill: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	// the postmaster notices, ends the others and recovers
	time.Sleep(200 * time.Millisecond)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var one int
		if queryRow(ctx, e.primary.DSN("postgres"), "SELECT 1", &one) == nil {
			return nil
		}
	}
	return fmt.Errorf("the server did not come back after its backend %d was killed", pid)
}

// restoreInPlace dumps the database while clients run, lets the source
// grant on for a second (grants the dump lacks), then drops the database
// and restores the dump under the same name: the most common restore.
func (e *env) restoreInPlace(ctx context.Context) error {
	file := filepath.Join(e.primary.Dir, "dump") // pg_dump runs as the server's user
	if err := e.primary.Dump(ctx, db, file); err != nil {
		return err
	}
	time.Sleep(time.Second)
	e.hold()
	if err := pgserver.Exec(ctx, e.primary.DSN("postgres"), "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
		return err
	}
	if err := e.primary.Restore(ctx, db, file); err != nil {
		return err
	}
	if err := e.databaseSettings(ctx, db); err != nil {
		return err
	}
	e.moveAll(e.primary)
	return nil
}

// databaseSettings applies the variant's database settings to database d.
func (e *env) databaseSettings(ctx context.Context, d string) error {
	return e.databaseSettingsOn(ctx, e.primary, d)
}

func (e *env) databaseSettingsOn(ctx context.Context, srv *pgserver.Server, d string) error {
	for _, set := range e.variant.Database {
		if err := pgserver.Exec(ctx, srv.DSN("postgres"), "ALTER DATABASE "+d+" SET "+set); err != nil {
			return err
		}
	}
	return nil
}

// logicalReplica publishes lease.leases alone (not lease.eras) to a
// subscriber in another cluster with the extension installed afresh,
// lets the subscriber fall a second behind (its subscription disabled
// while the source grants on), and moves every client to it: the grants
// the source gave in that second never reach it.
func (e *env) logicalReplica(ctx context.Context) error {
	n, err := e.primary.NewCluster(ctx, e.dir)
	if err != nil {
		return err
	}
	e.servers = append(e.servers, n)
	if err := pgserver.Exec(ctx, n.DSN("postgres"), "CREATE DATABASE "+db); err != nil {
		return err
	}
	if err := pgserver.Exec(ctx, n.DSN(db), e.variant.Create); err != nil {
		return err
	}
	if err := e.databaseSettingsOn(ctx, n, db); err != nil {
		return err
	}
	if err := pgserver.Exec(ctx, e.primary.DSN(db), "CREATE PUBLICATION pglease_rows FOR TABLE lease.leases"); err != nil {
		return err
	}
	conn := fmt.Sprintf("host=%s port=%d user=%s dbname=%s", e.primary.Socket(), e.primary.Port, e.primary.User, db)
	if err := pgserver.Exec(ctx, n.DSN(db), "CREATE SUBSCRIPTION pglease_rows CONNECTION '"+conn+"' PUBLICATION pglease_rows"); err != nil {
		return err
	}
	// the initial copy, then changes streaming for a while
	if err := n.WaitSubscribed(ctx, db); err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)
	if err := pgserver.Exec(ctx, n.DSN(db), "ALTER SUBSCRIPTION pglease_rows DISABLE"); err != nil {
		return err
	}
	time.Sleep(time.Second)
	e.hold()
	if err := pgserver.Exec(ctx, n.DSN(db), "ALTER SUBSCRIPTION pglease_rows SET (slot_name = NONE)", "DROP SUBSCRIPTION pglease_rows"); err != nil {
		return err
	}
	e.moveAll(n)
	return nil
}

// lost counts the grants acknowledged before the kill (the first acked
// of the history) that the server which goes on (before any client
// reaches it) lacks: its row of the name has a lower epoch.
func (e *env) lost(ctx context.Context, s *pgserver.Server, acked int) error {
	conn, err := connect(ctx, s.DSN(db))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT name, epoch FROM lease.leases")
	if err != nil {
		return err
	}
	have := map[string]int64{}
	for rows.Next() {
		var n string
		var ep int64
		if err := rows.Scan(&n, &ep); err != nil {
			return err
		}
		have[n] = ep
	}
	if err := rows.Err(); err != nil {
		return err
	}
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	for _, g := range e.w.grants[:acked] {
		if g.Sure && g.Epoch > have[g.Name] {
			e.lostN++
		}
	}
	e.counted = true
	return nil
}

// Scenarios, in the order of the contract's list.
var Scenarios = []Scenario{
	{
		Name: "crash", What: "kill -9 of the server, sessions at synchronous_commit = off",
		Client:   true,
		Sessions: []string{"SET synchronous_commit = off"},
		Fault: func(ctx context.Context, e *env) error {
			return e.killThen(ctx, func() (*pgserver.Server, error) { return e.primary, e.primary.Restart(ctx) })
		},
		Needs: []Variant{V020}, Loses: []Variant{V020, NoFloor},
	},
	{
		Name: "backend-kill", What: "kill -9 of one backend (the postmaster lives and runs crash recovery), sessions at synchronous_commit = off",
		Sessions: []string{"SET synchronous_commit = off"},
		Fault: func(ctx context.Context, e *env) error {
			return e.crashThen(ctx, func() error { return e.killBackend(ctx) },
				func() (*pgserver.Server, error) { return e.primary, nil })
		},
		Needs: []Variant{V020, V030Floor}, Loses: []Variant{V020, V030Floor, NoFloor},
	},
	{
		Name: "two-crashes", What: "kill -9 of the server twice, the first grants of the era between at synchronous_commit = off",
		Sessions: []string{"SET synchronous_commit = off"},
		Fault: func(ctx context.Context, e *env) error {
			restart := func() (*pgserver.Server, error) { return e.primary, e.primary.Restart(ctx) }
			if err := e.killThen(ctx, restart); err != nil {
				return err
			}
			// (and the variant's grace: the server between the crashes
			// must give grants; beside the install proofs, 600 ms after a
			// grace of 505 ms saw none)
			time.Sleep(600*time.Millisecond + e.variant.Grace)
			return e.killThen(ctx, restart)
		},
		Needs: []Variant{V020}, Loses: []Variant{V020},
	},
	{
		Name: "sync-failover", What: "kill -9 of the primary, promotion of its synchronous standby, sessions at synchronous_commit = off",
		Sessions:    []string{"SET synchronous_commit = off"},
		SyncStandby: "s1", Standby: true,
		Fault: func(ctx context.Context, e *env) error {
			return e.killThen(ctx, func() (*pgserver.Server, error) { return e.standby, e.standby.Promote(ctx) })
		},
		Needs: []Variant{V020}, Loses: []Variant{V020, NoFloor},
	},
	{
		Name: "async-failover", What: "the asynchronous standby 1 s behind, kill -9 of the primary, promotion",
		Client:  true,
		Standby: true,
		Fault: func(ctx context.Context, e *env) error {
			return e.partitionThenFailover(ctx)
		},
		Needs: []Variant{V020, NoEras},
	},
	{
		Name: "cascade-failover", What: "a cascading standby s2 streaming from the asynchronous standby s1: the primary lost and s1 promoted (timeline 2), the clients on it while s2 follows it onto timeline 2, then s2 cut off 1 s behind, s1 lost and s2 promoted (timeline 3)",
		Standby: true, Long: true,
		Fault: func(ctx context.Context, e *env) error {
			return e.cascadeFailover(ctx)
		},
		Needs: []Variant{V020, NoEras},
	},
	{
		Name: "patroni-failover", What: "Patroni and etcd: the primary's node lost (its Patroni and server killed), sessions at synchronous_commit = off; Patroni promotes the asynchronous replica once the leader key lapses",
		Client:   true,
		Sessions: []string{"SET synchronous_commit = off"},
		HA:       true, Standby: true, Long: true, // make ha (make test runs the client's Patroni test)
		Fault: func(ctx context.Context, e *env) error {
			return e.patroniFailover(ctx)
		},
		Needs: []Variant{V020}, Loses: []Variant{V020, NoFloor},
	},
	{
		Name: "patroni-failback", What: "patroni-failover, the lost node rejoining as a replica (pg_rewind) while the clients work on the promoted server, then a switchover (Patroni's REST API) back to it",
		Sessions: []string{"SET synchronous_commit = off"},
		HA:       true, Standby: true, Long: true,
		Fault: func(ctx context.Context, e *env) error {
			if err := e.patroniFailover(ctx); err != nil {
				return err
			}
			back, from := e.ha.Nodes[0], e.ha.Nodes[1]
			start := time.Now()
			if err := back.Rejoin(ctx); err != nil {
				return err
			}
			e.say("%s rejoined as a replica in %.1f s", back.Name, time.Since(start).Seconds())
			e.hold()
			start = time.Now()
			if err := e.ha.Switchover(ctx, from, back); err != nil {
				return err
			}
			e.say("switched over to %s in %.1f s", back.Name, time.Since(start).Seconds())
			e.moveAll(back.Server)
			return nil
		},
		Needs: []Variant{V020}, Loses: []Variant{V020},
	},
	{
		Name: "cancelled-wait", What: "the synchronous standby stalled, clients cancel their waiting COMMITs, kill -9, promotion",
		SyncStandby: "s1", Standby: true,
		Fault: func(ctx context.Context, e *env) error {
			// the clients' cancel requests: a COMMIT that waits for the
			// standby is cancelled (what a client's cancel request does:
			// SIGINT to its backend), and returns success with the warning
			stop := make(chan struct{})
			done := make(chan error, 1)
			go func() { done <- e.cancelWaits(ctx, stop) }()
			err := e.partitionThenFailover(ctx)
			close(stop)
			if cerr := <-done; err == nil {
				err = cerr
			}
			return err
		},
		Needs: []Variant{V020, NoEras},
	},
	{
		Name: "split-brain", What: "replication cut, the standby promoted, clients on both the old and the new primary",
		Client:  true,
		Standby: true,
		Fault: func(ctx context.Context, e *env) error {
			if err := e.standby.CutReplication(ctx); err != nil {
				return err
			}
			time.Sleep(500 * time.Millisecond)
			if err := e.standby.Promote(ctx); err != nil {
				return err
			}
			e.move(e.groups[1], e.standby.DSN(db))
			return nil
		},
		Needs: []Variant{V020, NoEras},
	},
	{
		Name: "dump-restore", What: "a dump taken while clients run, restored into a new cluster, the source still granting",
		Fault: func(ctx context.Context, e *env) error {
			file := filepath.Join(e.primary.Dir, "dump") // pg_dump runs as the server's user
			if err := e.primary.Dump(ctx, db, file); err != nil {
				return err
			}
			n, err := e.primary.NewCluster(ctx, e.dir)
			if err != nil {
				return err
			}
			e.servers = append(e.servers, n)
			if err := n.Restore(ctx, db, file); err != nil {
				return err
			}
			e.move(e.groups[1], n.DSN(db))
			return nil
		},
		// (a dump of 0.2.0 or 0.3.0 restores as the default version,
		// 0.4.0, which leaves the restored rows' eras behind: only 0.4.0
		// without eras can show the doubles here)
		Needs: []Variant{NoEras},
	},
	{
		Name: "restore-in-place", What: "a dump taken while clients run, the source granting on for a second, DROP DATABASE, the dump restored under the same name",
		Fault: func(ctx context.Context, e *env) error {
			return e.restoreInPlace(ctx)
		},
		Needs: []Variant{NoEras},
	},
	{
		Name: "restore-beside", What: "a dump restored into a second database of the same cluster, the source still granting",
		Fault: func(ctx context.Context, e *env) error {
			file := filepath.Join(e.primary.Dir, "dump")
			if err := e.primary.Dump(ctx, db, file); err != nil {
				return err
			}
			if err := e.primary.Restore(ctx, db+"_copy", file); err != nil {
				return err
			}
			if err := e.databaseSettings(ctx, db+"_copy"); err != nil {
				return err
			}
			e.move(e.groups[1], e.primary.DSN(db+"_copy"))
			return nil
		},
		Needs: []Variant{NoEras},
	},
	{
		Name: "table-restore", What: "lease.leases alone restored (pg_restore --data-only -t leases) into a second database with pg_lease created afresh, the source still granting",
		Fault: func(ctx context.Context, e *env) error {
			file := filepath.Join(e.primary.Dir, "dump")
			if err := e.primary.Dump(ctx, db, file); err != nil {
				return err
			}
			rows := db + "_rows"
			if err := pgserver.Exec(ctx, e.primary.DSN("postgres"), "CREATE DATABASE "+rows); err != nil {
				return err
			}
			if err := pgserver.Exec(ctx, e.primary.DSN(rows), e.variant.Create); err != nil {
				return err
			}
			if err := e.databaseSettings(ctx, rows); err != nil {
				return err
			}
			if err := e.primary.RestoreTableData(ctx, rows, file, "leases"); err != nil {
				return err
			}
			e.move(e.groups[1], e.primary.DSN(rows))
			return nil
		},
		Needs: []Variant{V020, V030, NoEras},
	},
	{
		Name: "logical-replica", What: "lease.leases alone replicated logically to another cluster, the subscriber a second behind, every client switched to it",
		Server: []string{"wal_level=logical"},
		Fault: func(ctx context.Context, e *env) error {
			return e.logicalReplica(ctx)
		},
		Needs: []Variant{V020, V030, NoEras},
	},
	{
		Name: "backup-archive", What: "a base backup restored with archive recovery (a new timeline) after the primary is lost",
		Fault: func(ctx context.Context, e *env) error {
			return e.restoreBackup(ctx, true, false, false)
		},
		Needs: []Variant{V020, NoEras},
	},
	{
		Name: "pitr-twice", What: "point-in-time recovery of a base backup to a restore point (timeline 2, the clients on it for a second), that server lost, then the same backup recovered to a later point of timeline 1 (timeline 3)",
		Long: true,
		Fault: func(ctx context.Context, e *env) error {
			return e.pitrTwice(ctx, false, false)
		},
		Needs: []Variant{V020, NoEras},
	},
	{
		Name: "pitr-reused-timeline", What: "pitr-twice with timeline 2's history file gone from the archive before the second recovery (a first recovery that archived elsewhere): PostgreSQL names the third line timeline 2 again; then lease.new_era()",
		Long: true,
		Fault: func(ctx context.Context, e *env) error {
			return e.pitrTwice(ctx, true, true)
		},
		Needs: []Variant{V020},
	},
	{
		Name: "pitr-reused-timeline-no-new-era", What: "the same without lease.new_era(): two promotions to one timeline ID, the case the docs' first assumption excludes",
		Long: true,
		Fault: func(ctx context.Context, e *env) error {
			return e.pitrTwice(ctx, true, false)
		},
		Needs: []Variant{Shipped},
	},
	{
		Name: "resetwal-new-era", What: "a clean restart, a second of grants, kill -9, pg_resetwal -f (the grants since the restart gone), start, then lease.new_era()",
		Long: true,
		Fault: func(ctx context.Context, e *env) error {
			return e.resetWAL(ctx, true)
		},
		Needs: []Variant{V020},
	},
	{
		Name: "resetwal-no-new-era", What: "the same without lease.new_era(): the server starts as after a clean shutdown, the case the docs say needs the call",
		Long: true,
		Fault: func(ctx context.Context, e *env) error {
			return e.resetWAL(ctx, false)
		},
		Needs: []Variant{Shipped},
	},
	{
		Name: "backup-new-era", What: "a base backup restored without archive recovery after the primary (restarted since the backup) is lost, then lease.new_era()",
		Fault: func(ctx context.Context, e *env) error {
			return e.restoreBackup(ctx, false, true, true)
		},
		Needs: []Variant{V020},
	},
	{
		Name: "backup-no-new-era", What: "the same without lease.new_era(): the case the docs say needs the call",
		Fault: func(ctx context.Context, e *env) error {
			return e.restoreBackup(ctx, false, false, true)
		},
		Needs: []Variant{Shipped},
	},
}

// cancelWaits cancels, every 20 ms until stop, each backend of the
// primary that waits for synchronous replication.
func (e *env) cancelWaits(ctx context.Context, stop chan struct{}) error {
	conn, err := connect(ctx, e.primary.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for {
		select {
		case <-stop:
			return nil
		case <-time.After(20 * time.Millisecond):
		}
		// the primary may be gone (killed): then there is nothing to cancel
		if _, err := conn.Exec(ctx, "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'"); err != nil {
			<-stop
			return nil
		}
	}
}

// partitionThenFailover cuts the standby off, lets the clients go on for
// a second (commits the standby lacks; on a synchronous primary, commits
// that wait, which the clients of cancelled-wait cancel), kills the
// primary and promotes the standby.
func (e *env) partitionThenFailover(ctx context.Context) error {
	if err := e.standby.CutReplication(ctx); err != nil {
		return err
	}
	time.Sleep(time.Second)
	if err := e.primary.Kill(); err != nil {
		return err
	}
	if err := e.standby.Promote(ctx); err != nil {
		return err
	}
	e.moveAll(e.standby)
	return nil
}

// cascadeFailover makes a cascading standby s2 of the standby s1, loses
// the primary and promotes s1, moves the clients there, and once s2
// follows s1 onto the new timeline, cuts s2 off, loses s1 a second later
// and promotes s2: two promotions in a row down a cascade, the second of
// a standby that missed the first promoted server's last grants.
func (e *env) cascadeFailover(ctx context.Context) error {
	s1 := e.standby
	s2, err := s1.StartStandby(ctx, e.dir, "s2")
	if err != nil {
		return fmt.Errorf("a cascading standby of s1: %w", err)
	}
	e.servers = append(e.servers, s2)
	time.Sleep(500 * time.Millisecond)
	if err := e.primary.Kill(); err != nil {
		return err
	}
	if err := s1.Promote(ctx); err != nil {
		return err
	}
	e.moveAll(s1)
	if err := waitReceived(ctx, s2, 2); err != nil {
		return err
	}
	time.Sleep(time.Second)
	if err := s2.CutReplication(ctx); err != nil {
		return err
	}
	time.Sleep(time.Second)
	if err := s1.Kill(); err != nil {
		return err
	}
	if err := s2.Promote(ctx); err != nil {
		return err
	}
	tli, err := timeline(ctx, s2)
	if err != nil {
		return err
	}
	e.say("s2 promoted on timeline %d", tli)
	if tli != 3 {
		return fmt.Errorf("s2 was promoted on timeline %d, not 3: it did not follow s1 onto timeline 2", tli)
	}
	e.moveAll(s2)
	return nil
}

// timeline is the timeline a primary writes WAL on (at once after a
// promotion: the last checkpoint's lags until the next checkpoint).
func timeline(ctx context.Context, s *pgserver.Server) (int, error) {
	var tli int
	err := queryRow(ctx, s.DSN("postgres"), "SELECT ('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::int", &tli)
	return tli, err
}

// waitReceived waits until the standby s streams WAL of timeline tli.
func waitReceived(ctx context.Context, s *pgserver.Server, tli int) error {
	var got int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if queryRow(ctx, s.DSN("postgres"), "SELECT coalesce(max(received_tli), 0) FROM pg_stat_wal_receiver WHERE status = 'streaming'", &got) == nil && got >= tli {
			return nil
		}
	}
	return fmt.Errorf("the standby in %s streams timeline %d, not %d, after 30 s", s.Dir, got, tli)
}

// restoreBackup takes a base backup now, lets the clients go on for a
// while (grants the backup lacks; across a restart of the primary with
// restart), kills the primary and starts the backup as the new primary.
func (e *env) restoreBackup(ctx context.Context, archive, newEra, restart bool) error {
	b, err := e.primary.BaseBackup(ctx, e.dir)
	if err != nil {
		return err
	}
	e.servers = append(e.servers, b)
	time.Sleep(500 * time.Millisecond)
	if restart {
		if err := e.primary.Kill(); err != nil {
			return err
		}
		if err := e.primary.Restart(ctx); err != nil {
			return err
		}
	}
	time.Sleep(time.Second)
	if err := e.primary.Kill(); err != nil {
		return err
	}
	arch := ""
	if archive {
		arch = filepath.Join(e.dir, "archive")
	}
	if err := b.StartRecovered(ctx, arch); err != nil {
		return err
	}
	if newEra {
		if err := e.newEra(ctx, b); err != nil {
			return err
		}
	}
	e.moveAll(b)
	return nil
}

// pitrTwice is an operator's point-in-time recovery that went to the
// wrong point first: two base backups, then restore points p1 and p2 half
// a second apart while the clients work, the primary lost once p2's WAL
// is archived; the first backup recovered to p1 (timeline 2; the clients
// work there for a second and its history file reaches the archive), that
// server lost, the second backup recovered to p2 on timeline 1 (timeline
// 3). Each line lacks grants the others gave: timeline 1's after p1 for
// timeline 2, and timeline 2's and timeline 1's after p2 for timeline 3.
// With loseHistory, timeline 2's history file is removed from the archive
// before the second recovery, which then names its line timeline 2 again;
// with newEra, lease.new_era() runs on it before the clients come.
func (e *env) pitrTwice(ctx context.Context, loseHistory, newEra bool) error {
	var backups [2]*pgserver.Server
	for i := range backups {
		b, err := e.primary.BaseBackup(ctx, e.dir)
		if err != nil {
			return err
		}
		e.servers = append(e.servers, b)
		backups[i] = b
	}
	archive := filepath.Join(e.dir, "archive")
	var segment string
	for _, p := range []string{"p1", "p2"} {
		time.Sleep(500 * time.Millisecond)
		if err := queryRow(ctx, e.primary.DSN("postgres"), "SELECT pg_walfile_name(pg_create_restore_point('"+p+"'))", &segment); err != nil {
			return err
		}
	}
	time.Sleep(500 * time.Millisecond)
	if err := pgserver.Exec(ctx, e.primary.DSN("postgres"), "SELECT pg_switch_wal()"); err != nil {
		return err
	}
	if err := waitFile(filepath.Join(archive, segment)); err != nil {
		return err
	}
	if err := e.primary.Kill(); err != nil {
		return err
	}
	e.hold()
	if err := backups[0].StartRecoveredTo(ctx, archive, "p1"); err != nil {
		return err
	}
	e.say("recovered to p1 on timeline 2")
	e.moveAll(backups[0])
	time.Sleep(time.Second)
	if err := waitFile(filepath.Join(archive, "00000002.history")); err != nil {
		return err
	}
	if err := backups[0].Kill(); err != nil {
		return err
	}
	e.hold()
	if loseHistory {
		if err := os.Remove(filepath.Join(archive, "00000002.history")); err != nil {
			return err
		}
	}
	if err := backups[1].StartRecoveredTo(ctx, archive, "p2"); err != nil {
		return err
	}
	if newEra {
		if err := e.newEra(ctx, backups[1]); err != nil {
			return err
		}
	}
	tli, err := timeline(ctx, backups[1])
	if err != nil {
		return err
	}
	// the scenario is the timeline PostgreSQL names: a new one, or 2 again
	if want := map[bool]int{false: 3, true: 2}[loseHistory]; tli != want {
		return fmt.Errorf("the second recovery is on timeline %d, not %d: the scenario did not happen", tli, want)
	}
	e.say("recovered to p2, on timeline %d", tli)
	e.moveAll(backups[1])
	return nil
}

// resetWAL restarts the primary cleanly (its shutdown checkpoint writes
// the era it is in to disk, the unlogged era_now among it), lets the
// clients work for a second, kills it, throws its WAL away with
// pg_resetwal and starts it again (with newEra, lease.new_era() before the
// clients come): every grant since the restart is gone, acknowledged or
// not, and the server starts as after a clean shutdown, the era of before
// the restart on disk.
func (e *env) resetWAL(ctx context.Context, newEra bool) error {
	if err := e.primary.Shutdown(ctx); err != nil {
		return err
	}
	if err := e.primary.Restart(ctx); err != nil {
		return err
	}
	time.Sleep(time.Second)
	if err := e.primary.Kill(); err != nil {
		return err
	}
	e.hold()
	if err := e.primary.ResetWAL(ctx); err != nil {
		return err
	}
	if err := e.primary.Restart(ctx); err != nil {
		return err
	}
	if newEra {
		if err := e.newEra(ctx, e.primary); err != nil {
			return err
		}
	}
	e.moveAll(e.primary)
	return nil
}

// newEra calls lease.new_era() on s, as the docs say to after a restore
// that needs it (a variant without the function goes on without it).
func (e *env) newEra(ctx context.Context, s *pgserver.Server) error {
	return pgserver.Exec(ctx, s.DSN(db), "DO $$ BEGIN IF to_regprocedure('lease.new_era()') IS NOT NULL THEN PERFORM lease.new_era(); END IF; END $$")
}

// waitFile waits up to 30 s for a file to exist (the archiver's copy).
func waitFile(name string) error {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(name); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within 30 s", name)
		}
	}
}

// Options configure a run.
type Options struct {
	PgConfig string
	Duration time.Duration // the whole run; the fault comes at half of it
	Clients  int
	Names    int
	Progress io.Writer
}

// Result is one scenario with one variant.
type Result struct {
	Scenario, Variant string
	Server            string
	Counts            Counts
	Doubles           []DoubleGrant
	// Lost are the grants acknowledged before the fault that the server
	// going on lacked (counted where the scenario counts them: Counted)
	Lost    int
	Counted bool
	// Takers are the grants given by each server that took clients over.
	Takers []int
	Err    error
}

// Run runs scenario s with variant v on a fresh primary (and standby).
func Run(ctx context.Context, o Options, s Scenario, v Variant) (r Result) {
	r = Result{Scenario: s.Name, Variant: v.Name}
	began := time.Now()
	say := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "  [%5.1fs] %s, %s: %s\n", time.Since(began).Seconds(), s.Name, v.Name, fmt.Sprintf(format, args...))
		}
	}
	dir, err := os.MkdirTemp("", "pglease-faults-")
	if err != nil {
		r.Err = err
		return r
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	e := &env{dir: dir, variant: v, say: say, groups: []*target{{}, {}}}
	defer func() {
		for _, srv := range e.servers {
			srv.Remove()
		}
	}()
	inst, err := pgserver.FindInstall(ctx, o.PgConfig)
	if err != nil {
		r.Err = err
		return r
	}
	if v.Extension != "" {
		remove, err := pgtest.Install(inst, v.Extension, model.PgLease.ScriptFile(), v.Edits...)
		if err != nil {
			r.Err = err
			return r
		}
		defer remove()
	} else if err := pgserver.InstallFiles(model.PgLease, pglease.Files, inst); err != nil {
		r.Err = err
		return r
	}
	archive := filepath.Join(dir, "archive")
	if err := os.Mkdir(archive, 0o777); err != nil {
		r.Err = err
		return r
	}
	os.Chmod(archive, 0o777)
	// wal_writer_delay = 1s: commits at synchronous_commit = off stay
	// unflushed for up to a second, so that the runs that lose them do so
	// reliably
	settings := []string{"fsync=on", "wal_writer_delay=1s", "archive_mode=on", "archive_command='cp %p " + archive + "/%f'"}
	settings = append(settings, s.Server...)
	var primary *pgserver.Server
	if s.HA {
		e.ha, err = pgserver.StartHA(ctx, inst, dir, settings...)
		if err != nil {
			r.Err = err
			return r
		}
		defer e.ha.Stop()
		primary = e.ha.Nodes[0].Server
	} else {
		primary, err = pgserver.StartWith(ctx, inst, dir, settings...)
		if err != nil {
			r.Err = err
			return r
		}
		e.servers = append(e.servers, primary)
	}
	e.primary = primary
	if err := pgserver.Exec(ctx, primary.DSN("postgres"), "CREATE DATABASE "+db); err != nil {
		r.Err = err
		return r
	}
	if err := pgserver.Exec(ctx, primary.DSN(db), v.Create); err != nil {
		r.Err = err
		return r
	}
	if err := e.databaseSettings(ctx, db); err != nil {
		r.Err = err
		return r
	}
	var version string
	if err := queryRow(ctx, primary.DSN(db), "SELECT current_setting('server_version')", &version); err == nil {
		r.Server = version
	}
	switch {
	case s.Standby && s.HA:
		say("the primary runs; Patroni makes a replica")
		n, err := e.ha.AddNode(ctx)
		if err == nil {
			err = n.WaitReplica(ctx)
		}
		if err != nil {
			r.Err = err
			return r
		}
		e.standby = n.Server
	case s.Standby:
		if e.standby, err = primary.StartStandby(ctx, dir, "s1"); err != nil {
			r.Err = err
			return r
		}
		e.servers = append(e.servers, e.standby)
	}
	if s.SyncStandby != "" {
		if err := primary.RequireSyncStandby(ctx, s.SyncStandby); err != nil {
			r.Err = err
			return r
		}
	}
	e.moveAll(primary)
	say("the clients start")
	w := &workload{settings: append(append([]string{}, s.Sessions...), v.Settings...), viaClient: v.Client}
	e.w = w
	for i := range max(o.Names, 1) {
		w.names = append(w.names, fmt.Sprintf("n%d", i))
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(runCtx, e.groups, max(o.Clients, 2), 7)
	}()
	half := o.Duration / 2
	time.Sleep(half)
	say("%s", s.What)
	w.fault.Store(true)
	faultStart := time.Now()
	ferr := s.Fault(ctx, e)
	// the run goes on for as long after the fault as before it
	if rest := half - time.Since(faultStart); rest > 0 && ferr == nil {
		time.Sleep(rest)
	}
	time.Sleep(half/2 + v.Grace)
	// under load a server that took clients over may give its first grants
	// late (a restore's grace): the run goes on until each has given
	// minTakerGrants, for at most a minute more
	for until := time.Now().Add(time.Minute); ferr == nil && time.Now().Before(until); time.Sleep(200 * time.Millisecond) {
		w.mu.Lock()
		short := false
		for _, n := range takerGrants(e.takers, w.grants) {
			short = short || n < minTakerGrants
		}
		w.mu.Unlock()
		if !short {
			break
		}
	}
	cancel()
	<-done
	say("the clients stopped")
	w.mu.Lock()
	defer w.mu.Unlock()
	r.Counts, r.Doubles, r.Lost, r.Counted = w.counts, doubleGrants(w.grants), e.lostN, e.counted
	r.Takers = takerGrants(e.takers, w.grants)
	switch {
	case ferr != nil:
		r.Err = fmt.Errorf("the fault: %w", ferr)
	case r.Counts.Before == 0 || r.Counts.After == 0 || r.Counts.GrantsAfter == 0:
		r.Err = fmt.Errorf("%w across the fault: %d calls before it, %d after (%d grants after)", errNoTraffic, r.Counts.Before, r.Counts.After, r.Counts.GrantsAfter)
	case len(e.takers) == 0:
		r.Err = fmt.Errorf("%w: no server took clients over", errNoTraffic)
	default:
		for i, n := range r.Takers {
			if n < minTakerGrants {
				r.Err = fmt.Errorf("%w on the server that took clients over (%s, move %d): %d grants given there, want %d",
					errNoTraffic, e.takers[i].dsn, e.takers[i].gen, n, minTakerGrants)
				break
			}
		}
	}
	return r
}

// minTakerGrants is how many grants each server that took clients over
// must give them for a run to count: a successor that answers only errors
// proves nothing.
const minTakerGrants = 3

// takerGrants counts, for each taker, the grants given on connections made
// to it after its move.
func takerGrants(ts []taker, gs []Grant) []int {
	out := make([]int, len(ts))
	for i, t := range ts {
		for _, g := range gs {
			if g.Given && g.Server == t.dsn && g.Gen == t.gen {
				out[i]++
			}
		}
	}
	return out
}

func queryRow(ctx context.Context, dsn, sql string, dst ...any) error {
	conn, err := connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(dst...)
}

// TestVariantsStillApply: the edits of the variants that install a copy
// still find their text in today's install script (the fast tier's
// check; the runs that show each variant caught are TestScenarios').
func TestVariantsStillApply(t *testing.T) {
	for _, v := range []Variant{NoEras} {
		if err := pgtest.Check(model.PgLease.ScriptFile(), v.Edits...); err != nil {
			t.Errorf("variant %s: %v", v.Name, err)
		}
	}
}
