package era_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/era"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/pgtest"
)

// TestBandCornersInSQL holds the SQL's band arithmetic against the Go
// model at every corner (generation, timeline and count at 0, 1 and their
// largest): lease.eras' check constraint computes the band in SQL, so a
// row with Go's band must be accepted and a row with any other refused;
// and the last epoch of the highest band is bigint's largest, as the
// script's band_last computes it.
func TestBandCornersInSQL(t *testing.T) {
	ctx := context.Background()
	conn := database(t, "bands")
	if _, err := conn.Exec(ctx, "CREATE EXTENSION pg_lease"); err != nil {
		t.Fatal(err)
	}
	const insert = `INSERT INTO lease.eras (band, generation, base_timeline, timeline, new_eras, installed, system_identifier, database_oid, home)
	                VALUES ($1, $2, 1, 1 + $3, $4, false, 7, 1, 'lease.eras'::regclass)`
	try := func(band, gen, rel, n int64) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, insert, band, gen, rel, n)
		return err
	}
	corners := func(max int64) []int64 { return []int64{0, 1, max} }
	checked := 0
	for _, gen := range corners(era.GenMax) {
		for _, rel := range corners(era.RelTLIMax) {
			for _, n := range corners(era.NMax) {
				band, err := era.Band04(gen, rel, n)
				if err != nil {
					t.Fatal(err)
				}
				if err := try(band, gen, rel, n); err != nil {
					t.Errorf("(%d, +%d, %d): SQL refuses Go's band %d: %v", gen, rel, n, band, err)
				}
				for _, other := range []int64{band - 1, band + 1} {
					if other >= 0 && try(other, gen, rel, n) == nil {
						t.Errorf("(%d, +%d, %d): SQL takes band %d; Go's is %d", gen, rel, n, other, band)
					}
				}
				checked++
			}
		}
	}
	// beyond each range: refused in SQL, an error in Go
	for _, c := range [][3]int64{{era.GenMax + 1, 0, 0}, {0, era.RelTLIMax + 1, 0}, {0, 0, era.NMax + 1}} {
		if _, err := era.Band04(c[0], c[1], c[2]); err == nil {
			t.Errorf("Go takes %v", c)
		}
		band := c[0]*(era.RelTLIMax+1)*(era.NMax+1) + c[1]*(era.NMax+1) + c[2]
		if try(band, c[0], c[1], c[2]) == nil {
			t.Errorf("SQL takes %v", c)
		}
	}
	top, _ := era.Band04(era.GenMax, era.RelTLIMax, era.NMax)
	var last int64
	if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT least((%d::bigint + 1)::numeric * 4294967296, 9223372036854775807)::bigint", top)).Scan(&last); err != nil {
		t.Fatal(err)
	}
	if last != era.Last04(top) || last != 1<<63-1 {
		t.Errorf("the highest band %d ends at %d in SQL, %d in Go", top, last, era.Last04(top))
	}
	t.Logf("%d corners agree; the highest band is %d, its last epoch %d", checked, top, last)
}

// TestEraEntryCannotBePrepared: a transaction that entered an era cannot
// be prepared (two-phase commit would let it outlive a crash undecided),
// and its era is then not entered; a grant in an era already entered can
// be prepared, and its row lock keeps the name from every other holder
// until it is decided.
func TestEraEntryCannotBePrepared(t *testing.T) {
	ctx := context.Background()
	conn := database(t, "twophase", "max_prepared_transactions=2")
	exec := func(sql string) error { _, err := conn.Exec(ctx, sql); return err }
	if err := exec("CREATE EXTENSION pg_lease"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"BEGIN", "SELECT lease.acquire('p1', 'a', interval '1 minute')"} {
		if err := exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := exec("PREPARE TRANSACTION 'entered'"); err == nil {
		t.Fatal("a transaction that entered an era was prepared")
	} else {
		t.Logf("PREPARE refused: %v", err)
	}
	var current bool
	if err := conn.QueryRow(ctx, "SELECT current FROM lease.current_era()").Scan(&current); err != nil || current {
		t.Fatalf("after the refused PREPARE the era is entered (%v, %v)", current, err)
	}
	// entered by an autocommitted grant, then a prepared one
	for _, s := range []string{"SELECT lease.acquire('p1', 'a', interval '1 minute')", "BEGIN",
		"SELECT lease.acquire('p2', 'a', interval '1 minute')", "PREPARE TRANSACTION 'grant'"} {
		if err := exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	other, err := pgx.Connect(ctx, conn.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	if _, err := other.Exec(ctx, "SET lock_timeout = '200ms'"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, "SELECT lease.acquire('p2', 'b', interval '1 minute')"); err == nil {
		t.Error("another holder acquired a name whose grant is prepared")
	}
	if err := exec("COMMIT PREPARED 'grant'"); err != nil {
		t.Fatal(err)
	}
	var owner string
	if err := conn.QueryRow(ctx, "SELECT owner FROM lease.inspect('p2')").Scan(&owner); err != nil || owner != "a" {
		t.Errorf("after COMMIT PREPARED p2 is held by %q (%v)", owner, err)
	}
}

// TestUpdateFrom020AboveTheBand: 0.2.0 epochs above 2^32 (which 0.3.0's
// update refused) update straight to the newest version: the held lease
// renews, and the next grants lie above every epoch the table held.
func TestUpdateFrom020AboveTheBand(t *testing.T) {
	ctx := context.Background()
	conn := database(t, "high")
	const high = int64(9_000_000_000) // above 2^32
	for _, s := range []string{
		"CREATE EXTENSION pg_lease VERSION '0.2.0'",
		"SELECT lease.acquire('held', 'a', interval '1 hour')",
		"SELECT lease.acquire('free', 'a', interval '1 hour')",
		fmt.Sprintf("UPDATE lease.leases SET epoch = %d WHERE name = 'held'", high),
		"ALTER EXTENSION pg_lease UPDATE",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var version, status string
	if err := conn.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'").Scan(&version); err != nil || version != model.PgLease.Version() {
		t.Fatalf("updated to %q (%v)", version, err)
	}
	if err := conn.QueryRow(ctx, "SELECT status FROM lease.renew('held', 'a', $1, interval '1 hour')", high).Scan(&status); err != nil || status != "ok" {
		t.Errorf("the held lease at %d: %q, %v", high, status, err)
	}
	var next int64
	if err := conn.QueryRow(ctx, "SELECT epoch FROM lease.acquire('new', 'b', interval '1 hour')").Scan(&next); err != nil || next <= high {
		t.Errorf("a new name after the update: %d, %v; want above %d", next, err, high)
	}
	t.Logf("0.2.0 with an epoch at %d updated to %s; the next grant %d", high, version, next)
}

// database starts a throwaway server (with settings) holding the newest
// rendered extension files and returns a connection to a new database db.
func database(t *testing.T, db string, settings ...string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	srv, _ := pgtest.Local(t, settings...)
	if err := pgserver.Exec(ctx, srv.DSN("postgres"), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, srv.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
