package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pglease/pglease-gen/internal/pgserver"
)

// startWithSession starts the first of -majors with pg_lease in its
// database postgres and, with the floor lowered (set_floor('session')),
// in its database session, whose connection string it returns too.
func startWithSession(ctx context.Context, o options, work string) (*benchServer, string, error) {
	s, err := startServer(ctx, os.Getenv("PG_CONFIG"), o.majors[0], o.npm, work)
	if err != nil {
		return nil, "", err
	}
	dsn := strings.Replace(s.DSN(), "dbname=postgres", "dbname=session", 1)
	if err := pgserver.Exec(ctx, s.DSN(), "CREATE DATABASE session"); err != nil {
		s.Stop()
		return nil, "", err
	}
	if err := pgserver.Exec(ctx, dsn, "CREATE EXTENSION pg_lease", "SELECT lease.set_floor('session')"); err != nil {
		s.Stop()
		return nil, "", err
	}
	return s, dsn, nil
}

// clientBench measures what the Go client (module lease) adds to a
// cycle: acquire and release of a free name through lease.Client
// (TryAcquire, which starts the lease's keep-alive, and Release) against
// the same two calls sent as bare SQL on a pgx connection, 8 clients on
// one server. At synchronous_commit = on a cycle waits for two WAL
// flushes; with sessions at off and the floor lowered
// (set_floor('session')) it is all CPU, where the client's own work
// shows most.
//
// Two ways, each round: in pairs of phases, one system's 8 clients and
// then the other's (the order alternating by round), with bare SQL against
// itself the same way: the spread a ratio has here when nothing differs;
// and side by side, 4 clients of each at once (the halves alternating by
// round), so that both meet the machine's drift at the same moments.
// Side by side shares this process's CPU between the two, so it shows a
// difference on the server's side only; in pairs, the clients' own
// process is measured too.
func clientBench(ctx context.Context, o options, names []string, work string) (string, error) {
	s, sessionDSN, err := startWithSession(ctx, o, work)
	if err != nil {
		return "", err
	}
	defer s.Stop()
	const off = "sync off, set_floor('session')"
	rows := []struct {
		name         string
		client, bare System
		side         bool // side by side, else in pairs of phases
	}{
		{"cycle, sync on, in pairs", goClientSystem(s.DSN(), "on"), bareSystem(s.DSN(), "on"), false},
		{"cycle, " + off + ", in pairs", goClientSystem(sessionDSN, "off"), bareSystem(sessionDSN, "off"), false},
		{"A/A: bare SQL against bare SQL, " + off + ", in pairs", bareSystem(sessionDSN, "off"), bareSystem(sessionDSN, "off"), false},
		{"cycle, sync on, side by side", goClientSystem(s.DSN(), "on"), bareSystem(s.DSN(), "on"), true},
		{"cycle, " + off + ", side by side", goClientSystem(sessionDSN, "off"), bareSystem(sessionDSN, "off"), true},
	}
	ratios := map[string][]float64{}
	// this process's CPU time per cycle (the clients', whichever system
	// runs: one at a time; in pairs only), and the server's
	own := map[string][2][]time.Duration{}
	for round := range o.rounds {
		for _, r := range rows {
			if r.side {
				systems := []System{r.client, r.bare}
				if round%2 == 1 {
					systems[0], systems[1] = systems[1], systems[0]
				}
				rs, err := cyclesSideBySide(ctx, systems, names, 8, o.phase)
				if err != nil {
					return "", fmt.Errorf("%s: %w", r.name, err)
				}
				if round%2 == 1 {
					rs[0], rs[1] = rs[1], rs[0]
				}
				ratios[r.name] = append(ratios[r.name], rs[0].PerSec()/rs[1].PerSec())
				say("round %d %s: %.0f/s and %.0f/s; the server's CPU per cycle %s and %s",
					round+1, r.name, rs[0].PerSec(), rs[1].PerSec(), us(rs[0].ServerPerOp()), us(rs[1].ServerPerOp()))
				continue
			}
			run := func(sys System) (Result, error) {
				before := selfCPU()
				res, err := cycles(ctx, sys, names, 8, o.phase)
				res.Client = selfCPU() - before
				return res, err
			}
			client, bare, err := pair(round, r.client, r.bare, run, run)
			if err != nil {
				return "", fmt.Errorf("%s: %w", r.name, err)
			}
			cpu := [2]time.Duration{client.Client / time.Duration(max(client.Ops, 1)), bare.Client / time.Duration(max(bare.Ops, 1))}
			ratios[r.name] = append(ratios[r.name], client.PerSec()/bare.PerSec())
			ow := own[r.name]
			ow[0], ow[1] = append(ow[0], cpu[0]), append(ow[1], cpu[1])
			own[r.name] = ow
			say("round %d %s: client %.0f/s, bare SQL %.0f/s; this process's CPU per cycle %s and %s; the server's %s and %s",
				round+1, r.name, client.PerSec(), bare.PerSec(), us(cpu[0]), us(cpu[1]), us(client.ServerPerOp()), us(bare.ServerPerOp()))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## The Go client against bare SQL on PostgreSQL %s, 8 clients, %d rounds of %s phases\n\n", s.Version, o.rounds, o.phase)
	b.WriteString("| workload | cycles/s, client / bare SQL (median) | middle half of the rounds | each round | the clients' CPU per cycle, client and bare SQL (medians) |\n|---|---:|---:|---|---:|\n")
	for _, r := range rows {
		var each []string
		for _, x := range ratios[r.name] {
			each = append(each, fmt.Sprintf("%.3f", x))
		}
		cpu := "(one process for both)"
		if !r.side {
			cpu = us(medianDuration(own[r.name][0])) + ", " + us(medianDuration(own[r.name][1]))
		}
		lo, hi := quartiles(ratios[r.name])
		fmt.Fprintf(&b, "| %s | %.3f | %.3f–%.3f | %s | %s |\n", r.name, median(ratios[r.name]), lo, hi, strings.Join(each, ", "), cpu)
	}
	return b.String(), nil
}

// quartiles are the first and third quartiles of xs (nearest rank).
func quartiles(xs []float64) (float64, float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0
	}
	return s[len(s)/4], s[(3*len(s))/4]
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
