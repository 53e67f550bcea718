package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/leaseclient"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

// serverSettings are the settings of every server the bench starts: the
// durability of a real server (fsync on).
var serverSettings = []string{"fsync=on", "shared_buffers=256MB", "max_connections=200"}

// benchServer is a server the bench measures, with the extension and the
// floor's table created in its postgres database.
type benchServer struct {
	srv     *pgserver.Server
	Major   int
	Version string // SHOW server_version
	Build   string // where the server comes from
}

// startServer starts a server of major: the installation pg_config names
// when it is of that major and npm is false, otherwise the pinned build of
// the npm registry (the one the local images use for 14 and 16 and the EL9
// stand-ins for 14-18; it keeps its symbols, which perf needs), unpacked
// under work. 19 has no npm build: it runs only as pg_config's own major.
func startServer(ctx context.Context, pgConfig string, major int, npm bool, work string) (*benchServer, error) {
	inst, err := pgserver.FindInstall(ctx, pgConfig)
	build := "local (" + inst.PgConfig + ")"
	if err != nil || inst.Major != major || npm {
		cache, err := images.DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(work, fmt.Sprintf("pg%d", major))
		if err := images.Unpack(ctx, cache, major, dst, say); err != nil {
			return nil, fmt.Errorf("PostgreSQL %d: %w", major, err)
		}
		srv, _ := images.ServerFor(major, runtime.GOARCH)
		inst = pgserver.Install{BinDir: filepath.Join(dst, "bin"), ShareDir: filepath.Join(dst, "share", "postgresql"), Major: major}
		build = "npm " + srv.Package() + "@" + srv.Version
	}
	if err := pgserver.InstallFiles(model.PgLease, pglease.Files, inst); err != nil {
		return nil, err
	}
	srv, err := pgserver.StartWith(ctx, inst, work, serverSettings...)
	if err != nil {
		return nil, err
	}
	b := &benchServer{srv: srv, Major: major, Build: build}
	conn, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err == nil {
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, leaseclient.CreateSQL+"; "+floorSchema+"; "+floorRows+"; "+protectedSchema)
	}
	if err == nil {
		err = conn.QueryRow(ctx, "SHOW server_version").Scan(&b.Version)
	}
	if err != nil {
		srv.Stop()
		return nil, err
	}
	return b, nil
}

func (b *benchServer) DSN() string { return b.srv.DSN("postgres") }
func (b *benchServer) Stop()       { b.srv.Stop() }

// floorRows are the floor's rows: they exist from the start, like
// pg_lease's after a first use.
const floorRows = "INSERT INTO floor_leases (name) SELECT format('res-%s', lpad(g::text, 4, '0')) FROM generate_series(0, 999) g ON CONFLICT DO NOTHING"

// leaseSystems are pg_lease and the floor at both durabilities, on dsn.
func leaseSystems(dsn string) (leaseOn, floorOn, leaseOff, floorOff System) {
	pg := func(name, sync string, wrap func(pgLease) Client) System {
		return System{Name: name, Durable: "sync " + sync, Connect: func(ctx context.Context) (Client, error) {
			conn, pid, err := pgConnect(ctx, dsn, sync)
			if err != nil {
				return nil, err
			}
			return wrap(pgLease{conn: conn, pid: pid}), nil
		}}
	}
	lease := func(p pgLease) Client { return &p }
	fl := func(p pgLease) Client { return &floor{p} }
	return pg("pg_lease", "on", lease), pg("floor", "on", fl), pg("pg_lease", "off", lease), pg("floor", "off", fl)
}

// A Headline is pg_lease against the floor at 8 clients on one major:
// rounds of pairs measured back to back, the order within a pair
// alternating from round to round; the ratio reported is the median.
type Headline struct {
	Server  *benchServer
	Rounds  int
	Ratios  map[string][]float64 // by row: "cycle sync on", "cycle sync off", "renew sync off"
	Results map[string][]Result  // the pairs' measurements, by row
}

var headlineRows = []string{"cycle sync on", "cycle sync off", "renew sync off", "guarded UPDATE sync on", "guarded UPDATE sync off"}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (h Headline) Median(row string) float64 { return median(h.Ratios[row]) }

// medians are the medians of f over a row's pg_lease and floor results
// (Results holds them in pairs, pg_lease first).
func (h Headline) medians(row string, f func(Result) float64) (lease, floor float64) {
	var ls, fs []float64
	for i, r := range h.Results[row] {
		if i%2 == 0 {
			ls = append(ls, f(r))
		} else {
			fs = append(fs, f(r))
		}
	}
	return median(ls), median(fs)
}

// Line is the headline's summary line.
func (h Headline) Line() string {
	return fmt.Sprintf("pg_lease/floor PG%d: %.2f (sync on), %.2f (sync off)", h.Server.Major, h.Median("cycle sync on"), h.Median("cycle sync off"))
}

func headline(ctx context.Context, s *benchServer, names []string, rounds int, phase time.Duration) (Headline, error) {
	h := Headline{Server: s, Rounds: rounds, Ratios: map[string][]float64{}, Results: map[string][]Result{}}
	leaseOn, floorOn, leaseOff, floorOff := leaseSystems(s.DSN())
	type pairOf struct {
		row          string
		lease, floor System
		run          func(System) (Result, error)
	}
	cycle := func(sys System) (Result, error) { return cycles(ctx, sys, names, 8, phase) }
	renew := func(sys System) (Result, error) { return renews(ctx, sys, names, 8, phase) }
	guarded := func(sys System) (Result, error) { return guardedWrites(ctx, sys, 8, phase) }
	pairs := []pairOf{
		{"cycle sync on", leaseOn, floorOn, cycle},
		{"cycle sync off", leaseOff, floorOff, cycle},
		{"renew sync off", leaseOff, floorOff, renew},
		{"guarded UPDATE sync on", leaseOn, floorOn, guarded},
		{"guarded UPDATE sync off", leaseOff, floorOff, guarded},
	}
	for round := range rounds {
		for _, p := range pairs {
			order := []System{p.lease, p.floor}
			if round%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			var got [2]Result
			for i, sys := range order {
				r, err := p.run(sys)
				if err != nil {
					return h, fmt.Errorf("PG%d %s %s: %w", s.Major, p.row, sys.Name+" ("+sys.Durable+")", err)
				}
				got[i] = r
			}
			lease, fl := got[0], got[1]
			if round%2 == 1 {
				lease, fl = fl, lease
			}
			ratio := lease.PerSec() / fl.PerSec()
			h.Ratios[p.row] = append(h.Ratios[p.row], ratio)
			h.Results[p.row] = append(h.Results[p.row], lease, fl)
			say("PG%d round %d/%d %s: pg_lease %.0f/s, floor %.0f/s: %.2f; server CPU per op %s and %s", s.Major, round+1, rounds, p.row,
				lease.PerSec(), fl.PerSec(), ratio, us(lease.ServerPerOp()), us(fl.ServerPerOp()))
		}
	}
	return h, nil
}

// headlineSection is the per-major table.
func headlineSection(hs []Headline, phase time.Duration) string {
	if len(hs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## pg_lease against the floor at 8 clients, per major\n\n")
	b.WriteString("The guarded UPDATE rows are a transaction of lease.guard and one UPDATE of a protected row (sent together) against the same UPDATE alone.\n\n")
	fmt.Fprintf(&b, "Each cell: the median of %d rounds of pg_lease/floor, each round one pair of %s phases back to back (the order alternating), with pg_lease's and the floor's median ops/s; the range of the rounds' ratios in brackets.\n\n", hs[0].Rounds, phase)
	b.WriteString("| PostgreSQL | server build |")
	for _, row := range headlineRows {
		fmt.Fprintf(&b, " %s |", row)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---:|", len(headlineRows)) + "\n")
	for _, h := range hs {
		fmt.Fprintf(&b, "| %s | %s |", h.Server.Version, h.Server.Build)
		for _, row := range headlineRows {
			lease, fl := h.medians(row, Result.PerSec)
			rs := h.Ratios[row]
			fmt.Fprintf(&b, " **%.2f** (%.0f / %.0f) [%.2f–%.2f] |", h.Median(row), lease, fl, slices.Min(rs), slices.Max(rs))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nServer CPU per operation (the backends' CPU time over the operations, median of the rounds), pg_lease / floor:\n\n")
	b.WriteString("| PostgreSQL |")
	for _, row := range headlineRows {
		fmt.Fprintf(&b, " %s |", row)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(headlineRows)) + "\n")
	for _, h := range hs {
		fmt.Fprintf(&b, "| %d |", h.Server.Major)
		for _, row := range headlineRows {
			lease, fl := h.medians(row, func(r Result) float64 { return float64(r.ServerPerOp()) / float64(time.Microsecond) })
			fmt.Fprintf(&b, " %.1f µs / %.1f µs |", lease, fl)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return b.String()
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond)) }

// headlines runs the headline on every major in turn, one server at a time.
func headlines(ctx context.Context, o options, names []string, work string) ([]Headline, error) {
	var hs []Headline
	for _, major := range o.majors {
		s, err := startServer(ctx, os.Getenv("PG_CONFIG"), major, o.npm, work)
		if err != nil {
			return nil, err
		}
		say("headline on PostgreSQL %s (%s)", s.Version, s.Build)
		h, err := headline(ctx, s, names, o.rounds, o.phase)
		s.Stop()
		if err != nil {
			return nil, err
		}
		say("%s", h.Line())
		hs = append(hs, h)
	}
	return hs, nil
}
