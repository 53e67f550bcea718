package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// keepCostNames are the session sizes the keep-alive's cost is measured at.
var keepCostNames = []int{1, 100, 10_000}

// writeCounter counts the client's writes to the server's socket: pgx sends
// a call (Bind, Execute, Sync on its cached statement) in one write and
// reads the answer before it writes again, so writes per call are round
// trips per call.
type writeCounter struct {
	net.Conn
	n *atomic.Int64
}

func (w writeCounter) Write(b []byte) (int, error) {
	w.n.Add(1)
	return w.Conn.Write(b)
}

// KeepCost is one session size's figures: per keep-alive, the caller's
// latency, the serving backend's CPU (/proc/PID/stat), the WAL the server
// inserted (pg_current_wal_insert_lsn, read on another connection) and
// the client's socket writes.
type KeepCost struct {
	Names      int
	Calls      int64
	Latency    time.Duration
	BackendCPU time.Duration
	WAL        float64
	Writes     float64
}

// keepCostBench: one client keeps a session alive, call after call, for
// a phase, with 1, 100 and 10,000 names under the session, on
// pg_config's installation at synchronous_commit = on (the session's own
// setting, which a keep-alive commits at). The goal: one round
// trip, and CPU and WAL within 2x of a session of one name.
func keepCostBench(ctx context.Context, o options, work string) (string, error) {
	s, err := startServer(ctx, os.Getenv("PG_CONFIG"), o.majors[0], o.npm, work)
	if err != nil {
		return "", err
	}
	defer s.Stop()
	admin, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	var costs []KeepCost
	for _, n := range keepCostNames {
		c, err := keepCost(ctx, s.DSN(), admin, n, o.phase)
		if err != nil {
			return "", fmt.Errorf("%d names: %w", n, err)
		}
		say("%d names: %d keep-alives, %v each, backend CPU %v, WAL %.0f B, %.2f writes", n, c.Calls, c.Latency, c.BackendCPU, c.WAL, c.Writes)
		costs = append(costs, c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "PostgreSQL %s (%s), one client, %s per size, synchronous_commit = on\n\n", s.Version, s.Build, o.phase)
	b.WriteString("| names under the session | keep-alives | latency | backend CPU per keep-alive | WAL per keep-alive | socket writes per keep-alive | CPU, WAL vs 1 name |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range costs {
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %.0f B | %.2f | %.2f×, %.2f× |\n", c.Names, c.Calls, ms(c.Latency), us(c.BackendCPU), c.WAL, c.Writes,
			float64(c.BackendCPU)/float64(costs[0].BackendCPU), c.WAL/costs[0].WAL)
	}
	return b.String(), nil
}

func keepCost(ctx context.Context, dsn string, admin *pgx.Conn, n int, phase time.Duration) (KeepCost, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return KeepCost{}, err
	}
	var writes atomic.Int64
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return writeCounter{Conn: c, n: &writes}, nil
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return KeepCost{}, err
	}
	defer conn.Close(ctx)
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return KeepCost{}, err
	}
	owner := fmt.Sprintf("keepcost-%d", n)
	var session int64
	if err := conn.QueryRow(ctx, "SELECT session FROM lease.open_session($1, interval '1 minute')", owner).Scan(&session); err != nil {
		return KeepCost{}, err
	}
	var held int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM generate_series(1, $3::int) AS g, lease.session_acquire($1, $2, $2 || '-' || g) AS a WHERE a.acquired`,
		session, owner, n).Scan(&held); err != nil || held != n {
		return KeepCost{}, errOr(err, "the session took %d of its %d names", held, n)
	}
	keep := func() error {
		var status string
		if err := conn.QueryRow(ctx, "SELECT status FROM lease.keep_alive($1, $2)", session, owner).Scan(&status); err != nil || status != "ok" {
			return errOr(err, "keep_alive: %s", status)
		}
		return nil
	}
	for range 200 { // the plan cached, the backend warm
		if err := keep(); err != nil {
			return KeepCost{}, err
		}
	}
	var lsn0, lsn1 float64
	if err := admin.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn() - '0/0'").Scan(&lsn0); err != nil {
		return KeepCost{}, err
	}
	cpu0, w0, start := procStat(pid, 11)+procStat(pid, 12), writes.Load(), time.Now()
	var calls int64
	for time.Since(start) < phase {
		if err := keep(); err != nil {
			return KeepCost{}, err
		}
		calls++
	}
	elapsed, cpu1, w1 := time.Since(start), procStat(pid, 11)+procStat(pid, 12), writes.Load()
	if err := admin.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn() - '0/0'").Scan(&lsn1); err != nil {
		return KeepCost{}, err
	}
	if cpu0 == 0 {
		return KeepCost{}, fmt.Errorf("no CPU time read for backend %d in /proc (is the server on this machine?)", pid)
	}
	var released int64
	if err := conn.QueryRow(ctx, "SELECT released FROM lease.close_session($1, $2)", session, owner).Scan(&released); err != nil || released != int64(n) {
		return KeepCost{}, errOr(err, "close_session released %d of %d names", released, n)
	}
	return KeepCost{
		Names:      n,
		Calls:      calls,
		Latency:    elapsed / time.Duration(calls),
		BackendCPU: time.Duration(cpu1-cpu0) * 10 * time.Millisecond / time.Duration(calls),
		WAL:        (lsn1 - lsn0) / float64(calls),
		Writes:     float64(w1-w0) / float64(calls),
	}, nil
}
