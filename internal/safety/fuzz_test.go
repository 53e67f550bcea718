package safety

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/leaseclient"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// One server per test process (the fuzzer runs several processes).
var (
	fuzzOnce sync.Once
	fuzzSrv  *pgserver.Server
	fuzzConn *pgx.Conn
	fuzzErr  error
)

func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		os.Exit(holderMain()) // a holder process of TestHoldersNeverOverlap
	}
	code := m.Run()
	if fuzzSrv != nil {
		fuzzConn.Close(context.Background())
		fuzzSrv.Stop()
	}
	os.Exit(code)
}

func fuzzSession(t *testing.T) *pgx.Conn {
	testenv.Server(t)
	fuzzOnce.Do(func() { fuzzSrv, fuzzConn, fuzzErr = startFuzzServer(context.Background()) })
	if fuzzErr != nil {
		t.Fatal(fuzzErr)
	}
	return fuzzConn
}

// startFuzzServer installs the rendered extension (the one this tree
// makes, not whatever the machine had) and starts a server with it.
func startFuzzServer(ctx context.Context) (*pgserver.Server, *pgx.Conn, error) {
	srv, _, err := pgserver.StartWithExtension(ctx, os.Getenv("PG_CONFIG"), model.PgLease, pglease.Files)
	if err != nil {
		return nil, nil, err
	}
	conn, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err == nil {
		// a blocking acquire on a held lease waits, as it should; cap it
		if err = leaseclient.Create(ctx, conn); err == nil {
			_, err = conn.Exec(ctx, "SET statement_timeout = '1s'")
		}
	}
	if err != nil {
		srv.Stop()
		return nil, nil, err
	}
	return srv, conn, nil
}

// TestFuzzServerRunsTheRenderedScript leaves a stale pg_lease in the
// installation, as an older make install would, and wants the fuzz
// server to run the script this tree renders.
func TestFuzzServerRunsTheRenderedScript(t *testing.T) {
	testenv.Server(t)
	ctx := context.Background()
	inst, err := pgserver.FindInstall(ctx, os.Getenv("PG_CONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := render.Extension(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	stale := append(slices.Clone(files[model.PgLease.ScriptFile()]), "\nCOMMENT ON SCHEMA lease IS 'stale';\n"...)
	if err := os.WriteFile(filepath.Join(inst.ExtensionDir(), model.PgLease.ScriptFile()), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pgserver.InstallFiles(model.PgLease, pglease.Files, inst) })
	srv, conn, err := startFuzzServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	defer conn.Close(ctx)
	var comment *string
	if err := conn.QueryRow(ctx, "SELECT obj_description('lease'::regnamespace, 'pg_namespace')").Scan(&comment); err != nil {
		t.Fatal(err)
	}
	if comment != nil && *comment == "stale" {
		t.Error("the fuzz server runs the installation's stale pg_lease, not the rendered one")
	}
}

// snapshot is the table's whole content.
func snapshot(t *testing.T, conn *pgx.Conn) string {
	var s string
	if err := conn.QueryRow(context.Background(), "SELECT coalesce(string_agg(row(l.*)::text, ',' ORDER BY name), '') FROM lease.leases l").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzCall calls one of the functions with arguments of every shape: each
// call either succeeds as the contract says or raises 22023 and changes
// nothing; a blocking acquire may also run out of time (57014), which
// changes nothing either. No other error, and the server stays up.
func FuzzCall(f *testing.F) {
	long := strings.Repeat("x", 1024)
	longMB := strings.Repeat("é", 512) // 1024 bytes
	for _, s := range []struct {
		op                     uint8
		name, owner, ttl, wait string
		epoch                  int64
		nulls                  uint8
	}{
		{0, "job", "w", "30 seconds", "", 0, 8},
		{0, "job", "w", "1 microsecond", "0", 0, 0},
		{0, "", "w", "1 minute", "", 0, 8},
		{0, "job", "", "1 minute", "", 0, 8},
		{0, long, "w", "1 minute", "", 0, 8},
		{0, long + "x", "w", "1 minute", "", 0, 8},
		{0, longMB, longMB, "1 minute", "", 0, 8},
		{0, longMB + "é", "w", "1 minute", "", 0, 8},
		{0, "job\t\n\r\x01\x7f", "w", "1 minute", "", 0, 8},
		{0, "'; DROP TABLE lease.leases; --", "$$ OR 1=1 $$", "1 minute", "", 0, 8},
		{0, "Robert'); DELETE FROM lease.leases;--", "\\x00", "1 minute", "", 0, 8},
		{0, "job", "w", "1 mon", "", 0, 8},
		{0, "job", "w", "1 year", "", 0, 8},
		{0, "job", "w", "-1 day", "", 0, 8},
		{0, "job", "w", "0", "", 0, 8},
		{0, "job", "w", "1 day -86400 seconds", "", 0, 8},
		{0, "job", "w", "-1 day +86401 seconds", "", 0, 8},
		{0, "job", "w", "infinity", "", 0, 8},
		{0, "job", "w", "-infinity", "", 0, 8},
		{0, "job", "w", "178000000 years", "", 0, 8},
		{0, "job", "w", "2147483647 days", "", 0, 8},
		{0, "job", "w", "9223372036854 seconds", "", 0, 8},
		{0, "job", "w", "1 minute", "-1 second", 0, 0},
		{0, "job", "w", "1 minute", "infinity", 0, 0},
		{0, "job", "w", "1 minute", "2147483647 days", 0, 0},
		{0, "job", "other", "1 minute", "10 milliseconds", 0, 0},
		{0, "job", "w", "", "", 0, 4 | 8},
		{0, "", "", "", "", 0, 1 | 2 | 4 | 8},
		{1, "job", "w", "1 minute", "", 1, 0},
		{1, "job", "w", "1 minute", "", 0, 0},
		{1, "job", "w", "1 minute", "", -1, 0},
		{1, "job", "w", "1 minute", "", 9223372036854775807, 0},
		{1, "job", "w", "1 minute", "", -9223372036854775808, 0},
		{1, "job", "w", "1 mon", "", 1, 0},
		{1, "job", "w", "1 minute", "", 1, 16},
		{2, "job", "w", "", "", 1, 0},
		{2, "job", "w", "", "", 0, 0},
		{2, "job", "w", "", "", 1, 16},
		{2, "", "w", "", "", 1, 0},
		{3, "job", "", "", "", 0, 0},
		{3, "", "", "", "", 0, 0},
		{3, "", "", "", "", 0, 1},
	} {
		f.Add(s.op, s.name, s.owner, s.ttl, s.wait, s.epoch, s.nulls)
	}
	f.Fuzz(func(t *testing.T, op uint8, name, owner, ttl, wait string, epoch int64, nulls uint8) {
		for _, s := range []string{name, owner, ttl, wait} {
			// the server refuses such text before any function runs
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				return
			}
		}
		conn := fuzzSession(t)
		ctx := context.Background()
		arg := func(bit uint8, v any) any {
			if nulls&bit != 0 {
				return nil
			}
			return v
		}
		a := []any{arg(1, name), arg(2, owner), arg(4, ttl), arg(8, wait), arg(16, epoch)}
		// the interval arguments each function takes
		intervals := map[uint8][]any{0: {a[2], a[3]}, 1: {a[2]}}[op%4]
		for _, iv := range intervals {
			if iv == nil {
				continue
			}
			// an interval that does not parse is refused by the cast, before the call
			if _, err := conn.Exec(ctx, "SELECT $1::interval", iv); err != nil {
				return
			}
		}
		before := snapshot(t, conn)
		start := time.Now()
		var err error
		var okResult bool
		switch op % 4 {
		case 0:
			var g leaseclient.Grant
			g, err = leaseclient.Acquire(ctx, conn, a[0], a[1], a[2], a[3])
			if err == nil {
				if g.Acquired != (g.Epoch != nil) || g.Acquired != (g.Expires != nil) || (g.Epoch != nil && *g.Epoch < 1) {
					t.Fatalf("acquire returned (%v, %v, %v)", g.Acquired, g.Epoch, g.Expires)
				}
				okResult = g.Acquired
			}
		case 1:
			var r leaseclient.Renewal
			r, err = leaseclient.Renew(ctx, conn, a[0], a[1], a[4], a[2])
			if err == nil {
				if !validStatus(r.Status) || (r.Status == "ok") != (r.Expires != nil) {
					t.Fatalf("renew returned (%q, %v)", r.Status, r.Expires)
				}
				okResult = r.Status == "ok"
			}
		case 2:
			var status string
			status, err = leaseclient.Release(ctx, conn, a[0], a[1], a[4])
			if err == nil {
				if !validStatus(status) {
					t.Fatalf("release returned %q", status)
				}
				okResult = status == "ok"
			}
		case 3:
			_, err = leaseclient.Inspect(ctx, conn, a[0])
		}
		if err := conn.Ping(ctx); err != nil {
			t.Fatalf("the server went away after op %d: %v", op%4, err)
		}
		if err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("op %d: %v", op%4, err)
			}
			waited := op%4 == 0 && a[3] != nil && pe.Code == "57014"
			if pe.Code != "22023" && !waited {
				t.Fatalf("op %d (%q, %q, %q, %q, %d, nulls %b): SQLSTATE %s %s; want 22023", op%4, name, owner, ttl, wait, epoch, nulls, pe.Code, pe.Message)
			}
			if pe.Code == "22023" && time.Since(start) > 500*time.Millisecond {
				t.Fatalf("a refused call took %s", time.Since(start))
			}
		}
		if (err != nil || !okResult) && snapshot(t, conn) != before {
			t.Fatalf("op %d failed or was refused but changed the table (%v)", op%4, err)
		}
	})
}

func validStatus(s string) bool {
	switch s {
	case "ok", "not_owner", "epoch_mismatch", "lapsed":
		return true
	}
	return false
}
