package faults

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

// A Variant is the extension a run installs: 0.3.0 as shipped, or with
// one of its parts taken away, to show that the scenario that needs that
// part finds double grants without it.
type Variant struct {
	Name string
	// Create is the CREATE EXTENSION statement.
	Create string
	// Settings are run on each client connection (after the scenario's).
	Settings []string
	// Extension is the name of a copy installed with Edits applied to
	// the newest install script ("" for pg_lease itself).
	Extension string
	Edits     []string
}

// Variants: the shipped 0.3.0, 0.2.0, and 0.3.0 without its durability
// floor (its own setting, session) or without eras (every grant in band 0).
var (
	Shipped = Variant{Name: "0.3.0", Create: "CREATE EXTENSION pg_lease"}
	V020    = Variant{Name: "0.2.0", Create: "CREATE EXTENSION pg_lease VERSION '0.2.0'"}
	NoFloor = Variant{Name: "0.3.0 without the floor", Create: "CREATE EXTENSION pg_lease", Settings: []string{"SET lease.synchronous_commit = session"}}
	NoEras  = Variant{Name: "0.3.0 without eras", Create: "CREATE EXTENSION pg_lease_noeras", Extension: "pg_lease_noeras",
		Edits: []string{"v_band := @extschema@.era_band();", "v_band := 0;"}}
)

// A Scenario is one fault in the middle of a run.
type Scenario struct {
	Name string
	What string
	// Settings of the sessions (synchronous_commit = off, say).
	Sessions []string
	// Server settings of the primary.
	Primary []string
	// Standby: the primary gets a streaming standby named s1 (made
	// synchronous by Primary's synchronous_standby_names).
	Standby bool
	// CommitTimeout makes clients cancel a COMMIT that waits longer.
	CommitTimeout time.Duration
	// Fault injects the fault into the environment and moves the clients.
	Fault func(ctx context.Context, e *env) error
	// Needs are the variants that must show double grants here.
	Needs []Variant
}

// env is a run's servers and client groups.
type env struct {
	dir     string // the run's own temporary directory
	primary *pgserver.Server
	standby *pgserver.Server
	servers []*pgserver.Server // everything to remove at the end
	groups  []*target          // two groups of clients
	variant Variant
	say     func(string, ...any)
}

func (e *env) moveAll(s *pgserver.Server) {
	for _, g := range e.groups {
		g.set(s.DSN(db))
	}
}

const db = "faults"

// Scenarios, in the order of the contract's list.
var Scenarios = []Scenario{
	{
		Name: "crash", What: "kill -9 of the server, sessions at synchronous_commit = off",
		Sessions: []string{"SET synchronous_commit = off"},
		Fault: func(ctx context.Context, e *env) error {
			if err := e.primary.Kill(); err != nil {
				return err
			}
			return e.primary.Restart(ctx)
		},
		Needs: []Variant{V020, NoFloor},
	},
	{
		Name: "sync-failover", What: "kill -9 of the primary, promotion of its synchronous standby",
		Sessions: []string{"SET synchronous_commit = off"},
		Primary:  []string{"synchronous_standby_names=s1"}, Standby: true,
		Fault: func(ctx context.Context, e *env) error {
			if err := e.primary.Kill(); err != nil {
				return err
			}
			if err := e.standby.Promote(ctx); err != nil {
				return err
			}
			e.moveAll(e.standby)
			return nil
		},
		Needs: []Variant{V020, NoFloor},
	},
	{
		Name: "async-failover", What: "the asynchronous standby 1 s behind, kill -9 of the primary, promotion",
		Standby: true,
		Fault: func(ctx context.Context, e *env) error {
			pid, err := e.standby.PauseReplication(ctx)
			if err != nil {
				return err
			}
			time.Sleep(time.Second)
			if err := e.primary.Kill(); err != nil {
				return err
			}
			pgserver.ResumeReplication(pid)
			if err := e.standby.Promote(ctx); err != nil {
				return err
			}
			e.moveAll(e.standby)
			return nil
		},
		Needs: []Variant{V020, NoEras},
	},
	{
		Name: "cancelled-wait", What: "the synchronous standby stalled, clients cancel their waiting COMMITs, kill -9, promotion",
		Primary: []string{"synchronous_standby_names=s1"}, Standby: true, CommitTimeout: 100 * time.Millisecond,
		Fault: func(ctx context.Context, e *env) error {
			pid, err := e.standby.PauseReplication(ctx)
			if err != nil {
				return err
			}
			time.Sleep(time.Second)
			if err := e.primary.Kill(); err != nil {
				return err
			}
			pgserver.ResumeReplication(pid)
			if err := e.standby.Promote(ctx); err != nil {
				return err
			}
			e.moveAll(e.standby)
			return nil
		},
		Needs: []Variant{V020, NoEras},
	},
	{
		Name: "split-brain", What: "replication cut, the standby promoted, clients on both the old and the new primary",
		Standby: true,
		Fault: func(ctx context.Context, e *env) error {
			if _, err := e.standby.PauseReplication(ctx); err != nil {
				return err
			}
			if err := e.standby.Promote(ctx); err != nil {
				return err
			}
			e.groups[1].set(e.standby.DSN(db))
			return nil
		},
		Needs: []Variant{V020, NoEras},
	},
	{
		Name: "dump-restore", What: "a dump taken while clients run, restored into a new cluster, the source still granting",
		Fault: func(ctx context.Context, e *env) error {
			file := filepath.Join(e.dir, "dump")
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
			e.groups[1].set(n.DSN(db))
			return nil
		},
		Needs: []Variant{V020, NoEras},
	},
	{
		Name: "backup-archive", What: "a base backup restored with archive recovery (a new timeline) after the primary is lost",
		Fault: func(ctx context.Context, e *env) error {
			return e.restoreBackup(ctx, true, false, false)
		},
		Needs: []Variant{V020, NoEras},
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
		if err := pgserver.Exec(ctx, b.DSN(db), "SELECT lease.new_era()"); err != nil {
			return err
		}
	}
	e.moveAll(b)
	return nil
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
	Err               error
}

// Run runs scenario s with variant v on a fresh primary (and standby).
func Run(ctx context.Context, o Options, s Scenario, v Variant) (r Result) {
	r = Result{Scenario: s.Name, Variant: v.Name}
	say := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "  %s, %s: %s\n", s.Name, v.Name, fmt.Sprintf(format, args...))
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
		remove, err := pgserver.InstallVariant(model.PgLease, pglease.Files, inst, v.Extension, func(script string) (string, error) {
			for i := 0; i+1 < len(v.Edits); i += 2 {
				if !strings.Contains(script, v.Edits[i]) {
					return "", fmt.Errorf("variant %s: the script has no %q", v.Name, v.Edits[i])
				}
				script = strings.ReplaceAll(script, v.Edits[i], v.Edits[i+1])
			}
			return script, nil
		})
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
	settings := append([]string{"fsync=on", "archive_mode=on", "archive_command='cp %p " + archive + "/%f'"}, s.Primary...)
	primary, err := pgserver.StartWith(ctx, inst, dir, settings...)
	if err != nil {
		r.Err = err
		return r
	}
	e.primary = primary
	e.servers = append(e.servers, primary)
	if err := pgserver.Exec(ctx, primary.DSN("postgres"), "CREATE DATABASE "+db); err != nil {
		r.Err = err
		return r
	}
	if err := pgserver.Exec(ctx, primary.DSN(db), v.Create); err != nil {
		r.Err = err
		return r
	}
	var version string
	if err := queryRow(ctx, primary.DSN(db), "SELECT current_setting('server_version')", &version); err == nil {
		r.Server = version
	}
	if s.Standby {
		if e.standby, err = primary.StartStandby(ctx, dir, "s1"); err != nil {
			r.Err = err
			return r
		}
		e.servers = append(e.servers, e.standby)
	}
	e.moveAll(primary)
	w := &workload{settings: append(append([]string{}, s.Sessions...), v.Settings...), commitTimeout: s.CommitTimeout}
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
	time.Sleep(half / 2)
	cancel()
	<-done
	w.mu.Lock()
	defer w.mu.Unlock()
	r.Counts, r.Doubles = w.counts, doubleGrants(w.grants)
	switch {
	case ferr != nil:
		r.Err = fmt.Errorf("the fault: %w", ferr)
	case r.Counts.Before == 0 || r.Counts.After == 0 || r.Counts.GrantsAfter == 0:
		r.Err = fmt.Errorf("%w across the fault: %d calls before it, %d after (%d grants after)", errNoTraffic, r.Counts.Before, r.Counts.After, r.Counts.GrantsAfter)
	}
	return r
}

func queryRow(ctx context.Context, dsn, sql string, dst ...any) error {
	conn, err := connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(dst...)
}
