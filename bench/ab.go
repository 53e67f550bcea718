package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

// abBench measures a change to the extension: this tree's pg_lease
// against a baseline install script (rendered from an older commit), on
// one server, in two databases, in alternating pairs of short phases, so
// that the machine's drift falls on both alike. It reports this tree's
// throughput over the baseline's: the figure to report per change.
func abBench(ctx context.Context, o options, names []string, work string) (string, error) {
	s, done, err := startWithBaseline(ctx, o, work)
	if err != nil {
		return "", err
	}
	defer done()
	if err := pgserver.Exec(ctx, s.DSN(), "CREATE DATABASE base"); err != nil {
		return "", err
	}
	baseDSN := strings.Replace(s.DSN(), "dbname=postgres", "dbname=base", 1)
	conn, err := pgx.Connect(ctx, baseDSN)
	if err != nil {
		return "", err
	}
	_, err = conn.Exec(ctx, "CREATE EXTENSION pg_lease_base; "+floorSchema+"; "+floorRows)
	conn.Close(ctx)
	if err != nil {
		return "", err
	}
	// this tree once more, with the durability floor off for the database
	// (lease.set_floor('session'): 0.2.0's behaviour), in the database
	// session: what the floor costs, in the same run
	if err := pgserver.Exec(ctx, s.DSN(), "CREATE DATABASE session"); err != nil {
		return "", err
	}
	sessionDSN := strings.Replace(s.DSN(), "dbname=postgres", "dbname=session", 1)
	if err := pgserver.Exec(ctx, sessionDSN, "CREATE EXTENSION pg_lease", "SELECT lease.set_floor('session')", floorSchema, floorRows); err != nil {
		return "", err
	}
	newOn, _, newOff, _ := leaseSystems(s.DSN())
	baseOn, _, baseOff, _ := leaseSystems(baseDSN)
	_, _, sessionOff, _ := leaseSystems(sessionDSN)
	type row struct {
		name      string
		this, old System
		run       func(System) (Result, error)
		runOld    func(System) (Result, error) // the baseline's, when not run
	}
	cycle := func(sys System) (Result, error) { return cycles(ctx, sys, names, 8, o.phase) }
	renew := func(sys System) (Result, error) { return renews(ctx, sys, names, 8, o.phase) }
	first := func(sys System) (Result, error) { return firstCycles(ctx, sys, names, 8, o.phase) }
	hotRun := func(sys System) (Result, error) { return hot(ctx, sys, 8, o.phase) }
	keep := func(sys System) (Result, error) { return keepAlives(ctx, sys, names, 8, o.phase) }
	rows := []row{
		{"cycle sync off", newOff, baseOff, cycle, nil},
		{"renew sync off", newOff, baseOff, renew, nil},
		{"cycle sync on", newOn, baseOn, cycle, nil},
		{"a new connection's first cycle sync on", newOn, baseOn, first, nil},
		{"hot name sync off", newOff, baseOff, hotRun, nil},
		{"cycle sync off, this with lease.synchronous_commit = session", sessionOff, baseOff, cycle, nil},
		{"renew sync off, this with lease.synchronous_commit = session", sessionOff, baseOff, renew, nil},
		// the sessions goal: names kept alive per second, 10 per
		// session, over the baseline's renewals of one name a call
		{"names kept alive sync on, this by keep-alive (10 a session), the baseline by renew", newOn, baseOn, keep, renew},
	}
	ratios := map[string][]float64{}
	cpus := map[string][]float64{}
	// BENCH_AB_ONLY: the rows whose names contain it (all when unset)
	if only := os.Getenv("BENCH_AB_ONLY"); only != "" {
		var kept []row
		for _, r := range rows {
			if strings.Contains(r.name, only) {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			return "", fmt.Errorf("BENCH_AB_ONLY=%q names no workload", only)
		}
		rows = kept
	}
	for round := range o.rounds {
		for _, r := range rows {
			runOld := r.runOld
			if runOld == nil {
				runOld = r.run
			}
			this, old, err := pair(round, r.this, r.old, r.run, runOld)
			if err != nil {
				return "", fmt.Errorf("%s: %w", r.name, err)
			}
			ratios[r.name] = append(ratios[r.name], this.PerSec()/old.PerSec())
			cpus[r.name] = append(cpus[r.name], float64(this.ServerPerOp())/float64(old.ServerPerOp()))
			say("round %d %s: this %.0f/s, baseline %.0f/s; server CPU per op %s and %s", round+1, r.name, this.PerSec(), old.PerSec(), us(this.ServerPerOp()), us(old.ServerPerOp()))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## This tree against %s on PostgreSQL %s, 8 clients, %d rounds of %s pairs\n\n", o.baseline, s.Version, o.rounds, o.phase)
	b.WriteString("| workload | throughput, this / baseline | server CPU per op, this / baseline |\n|---|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.3f | %.3f |\n", r.name, median(ratios[r.name]), median(cpus[r.name]))
	}
	return b.String(), nil
}

// pair runs a with runA, then b with runB (b first in odd rounds, so
// that the machine's drift falls on both alike), and returns a's result
// and b's.
func pair(round int, a, b System, runA, runB func(System) (Result, error)) (Result, Result, error) {
	first, second, run1, run2 := a, b, runA, runB
	if round%2 == 1 {
		first, second, run1, run2 = b, a, runB, runA
	}
	r1, err := run1(first)
	if err != nil {
		return Result{}, Result{}, fmt.Errorf("%s: %w", first.Name, err)
	}
	r2, err := run2(second)
	if err != nil {
		return Result{}, Result{}, fmt.Errorf("%s: %w", second.Name, err)
	}
	if round%2 == 1 {
		r1, r2 = r2, r1
	}
	return r1, r2, nil
}

// startWithBaseline starts the first of -majors with this tree's pg_lease
// and, beside it, the baseline: a copy of the extension named
// pg_lease_base whose newest script is -baseline's. done stops the server
// and removes the copy.
func startWithBaseline(ctx context.Context, o options, work string) (*benchServer, func(), error) {
	base, err := os.ReadFile(o.baseline)
	if err != nil {
		return nil, nil, err
	}
	s, err := startServer(ctx, os.Getenv("PG_CONFIG"), o.majors[0], o.npm, work)
	if err != nil {
		return nil, nil, err
	}
	remove, err := pgserver.InstallCopy(model.PgLease, pglease.Files, s.srv.Install, "pg_lease_base", model.PgLease.ScriptFile(), func(string) (string, error) { return string(base), nil })
	if err != nil {
		s.Stop()
		return nil, nil, err
	}
	return s, func() { remove(); s.Stop() }, nil
}
