package pgserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// localServer starts a throwaway server from the local installation with
// the rendered extension installed. These tests need PostgreSQL installed
// (make test installs it); they fail rather than skip without it.
func localServer(t *testing.T) *Server {
	t.Helper()
	testenv.Server(t)
	ctx := context.Background()
	inst, err := FindInstall(ctx, "")
	if err != nil {
		t.Fatalf("%v (make deps installs PostgreSQL)", err)
	}
	if err := InstallFiles(model.PgLease, pglease.Files, inst); err != nil {
		t.Fatal(err)
	}
	srv, err := Start(ctx, inst, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	return srv
}

// TestRenderedScriptOnRealServer installs the rendered extension with
// CREATE EXTENSION through pgx and makes one call of each function.
func TestRenderedScriptOnRealServer(t *testing.T) {
	srv := localServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE EXTENSION "+model.PgLease.Name); err != nil {
		t.Fatalf("CREATE EXTENSION: %v", err)
	}
	var version string
	if err := conn.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = $1", model.PgLease.Name).Scan(&version); err != nil || version != model.PgLease.Version() {
		t.Fatalf("extversion = %q, %v; want %s", version, err, model.PgLease.Version())
	}
	var acquired bool
	var epoch int64
	if err := conn.QueryRow(ctx, "SELECT acquired, epoch FROM lease.acquire('go', 'test', interval '1 minute')").Scan(&acquired, &epoch); err != nil || !acquired || epoch != 1 {
		t.Fatalf("acquire = %v, %d, %v", acquired, epoch, err)
	}
	var status string
	if err := conn.QueryRow(ctx, "SELECT status FROM lease.renew('go', 'test', 1, interval '1 minute')").Scan(&status); err != nil || status != "ok" {
		t.Fatalf("renew = %q, %v", status, err)
	}
	if err := conn.QueryRow(ctx, "SELECT lease.release('go', 'test', 1)").Scan(&status); err != nil || status != "ok" {
		t.Fatalf("release = %q, %v", status, err)
	}
	var held bool
	if err := conn.QueryRow(ctx, "SELECT held, epoch FROM lease.inspect('go')").Scan(&held, &epoch); err != nil || held || epoch != 2 {
		t.Fatalf("inspect = %v, %d, %v", held, epoch, err)
	}
	_, err = conn.Exec(ctx, "SELECT lease.acquire('', 'test', interval '1 minute')")
	var pgErr interface{ SQLState() string }
	if !errors.As(err, &pgErr) || pgErr.SQLState() != "22023" {
		t.Fatalf("acquire with an empty name: %v; want SQLSTATE 22023", err)
	}
}

func TestParseMajor(t *testing.T) {
	for in, want := range map[string]int{
		"PostgreSQL 15.18 (Debian 15.18-0+deb12u1)": 15,
		"PostgreSQL 18beta1":                        18,
		"PostgreSQL 14.2":                           14,
	} {
		if got, err := ParseMajor(in); err != nil || got != want {
			t.Errorf("ParseMajor(%q) = %d, %v", in, got, err)
		}
	}
	if _, err := ParseMajor("psql 15"); err == nil {
		t.Error("ParseMajor accepted psql 15")
	}
}

// TestPgBouncerPoolsTransactions puts the pooler in front of a server with
// one server connection: two clients then share one session, which shows
// in what session state does (a session advisory lock taken by one client
// is granted to the other) and not in what pg_lease does.
func TestPgBouncerPoolsTransactions(t *testing.T) {
	srv := localServer(t)
	testenv.Tools(t, "pgbouncer")
	ctx := context.Background()
	if err := Exec(ctx, srv.DSN("postgres"), "CREATE EXTENSION "+model.PgLease.Name); err != nil {
		t.Fatal(err)
	}
	b, err := srv.StartPgBouncer(1, "SET statement_timeout = 4321")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	var a, c *pgx.Conn
	for _, p := range []**pgx.Conn{&a, &c} {
		if *p, err = pgx.Connect(ctx, b.DSN("postgres", srv.User)); err != nil {
			t.Fatal(err)
		}
		defer (*p).Close(ctx)
	}
	var timeout string
	if err := a.QueryRow(ctx, "SHOW statement_timeout").Scan(&timeout); err != nil || timeout != "4321ms" {
		t.Fatalf("statement_timeout through the pooler: %q, %v; want the connect query's 4321ms", timeout, err)
	}
	var got bool
	if err := a.QueryRow(ctx, "SELECT pg_try_advisory_lock(7)").Scan(&got); err != nil || !got {
		t.Fatalf("first advisory lock: %v, %v", got, err)
	}
	if err := c.QueryRow(ctx, "SELECT pg_try_advisory_lock(7)").Scan(&got); err != nil || !got {
		t.Fatalf("the other client's advisory lock: %v, %v; want true (one shared session: the pooler is not in transaction pooling)", got, err)
	}
	if err := a.QueryRow(ctx, "SELECT acquired FROM lease.acquire('pooled', 'a', '1 minute')").Scan(&got); err != nil || !got {
		t.Fatalf("acquire through the pooler: %v, %v", got, err)
	}
	if err := c.QueryRow(ctx, "SELECT acquired FROM lease.acquire('pooled', 'c', '1 minute')").Scan(&got); err != nil || got {
		t.Fatalf("the other client's acquire of the held lease: %v, %v; want false", got, err)
	}
}
