package safety

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The waits a call can meet behind another transaction that stays open,
// each run against the shipped script and a variant without the bound:
// the shipped one must return while the other transaction is still open,
// the variant must not (which shows the test can fail).
type waitCase struct {
	name    string
	broken  string   // the variant that waits (variants_test.go)
	setup   []string // run first, autocommitted
	other   string   // run in the other transaction, which then stays open
	call    string   // the waiting call
	errCode string   // what the call ends with ("" : no error)
}

var waitCases = []waitCase{
	{
		name:    "a new name created by an open transaction",
		broken:  "pg_lease_unbounded",
		other:   "SELECT lease.acquire('fresh', 'a', interval '1 minute')",
		call:    "SELECT epoch FROM lease.acquire('fresh', 'b', interval '1 minute', interval '300 milliseconds')",
		errCode: "57014",
	},
	{
		// era_now emptied stands for a crash, which empties the unlogged
		// table; the other transaction enters the next era and holds the
		// eras table's lock until it ends
		name:    "a new name while an open transaction enters the era",
		broken:  "pg_lease_unbounded",
		setup:   []string{"DELETE FROM lease.era_now"},
		other:   "SELECT lease.acquire('a', 'a', interval '1 minute')",
		call:    "SELECT epoch FROM lease.acquire('b', 'b', interval '1 minute', interval '300 milliseconds')",
		errCode: "57014",
	},
	{
		name:   "a released name while an open transaction enters the era",
		broken: "pg_lease_unbounded",
		setup: []string{
			"SELECT lease.release('b', 'b', (SELECT epoch FROM lease.acquire('b', 'b', interval '1 minute')))",
			"DELETE FROM lease.era_now",
		},
		other:   "SELECT lease.acquire('a', 'a', interval '1 minute')",
		call:    "SELECT epoch FROM lease.acquire('b', 'b', interval '1 minute', interval '300 milliseconds')",
		errCode: "57014",
	},
	{
		// the other transaction stands for a blocking acquire that checked
		// the era on its way and now sleeps until its lease is free
		name:   "the era check while another transaction holds the eras lock",
		broken: "pg_lease_era_locks",
		setup:  []string{"SELECT lease.acquire('a', 'a', interval '1 minute')"},
		other:  "LOCK TABLE lease.eras IN SHARE ROW EXCLUSIVE MODE",
		call:   "SELECT lease.enter_era(NULL)",
	},
}

// TestWaitsAreBounded: a blocking acquire counts every wait for another
// transaction against its max_wait, not only the wait for the lease's row;
// an era check with nothing to enter waits for no one. (A stress run in CI
// saw an acquire with max_wait 418 ms take 1.445 s: it waited for the
// eras lock of a blocking acquire that had checked the era and then slept.)
func TestWaitsAreBounded(t *testing.T) {
	srv, inst := server(t)
	installed := map[string]bool{}
	for _, c := range waitCases {
		if !installed[c.broken] {
			installVariant(t, inst, c.broken)
			installed[c.broken] = true
		}
	}
	for i, c := range waitCases {
		for _, ext := range []string{"pg_lease", c.broken} {
			dsn := database(t, srv, "waits_"+string(rune('a'+i))+"_"+strings.TrimPrefix(ext, "pg_lease"), ext)
			mustExec(t, dsn, c.setup...)
			returned, err := waitBehindOpen(t, dsn, c.other, c.call, 2*time.Second)
			var pe *pgconn.PgError
			got := ""
			if errors.As(err, &pe) {
				got = pe.Code
			} else if err != nil {
				t.Fatalf("%s (%s): %v", c.name, ext, err)
			}
			switch {
			case ext == "pg_lease" && (!returned || got != c.errCode):
				t.Errorf("%s: returned while the other transaction was open: %v, with %q; want true, with %q (%v)", c.name, returned, got, c.errCode, err)
			case ext == c.broken && returned:
				t.Errorf("%s: the variant %s returned while the other transaction was open: the test cannot tell the bound", c.name, ext)
			default:
				t.Logf("%s, %s: returned while the other transaction was open: %v (%v)", c.name, ext, returned, err)
			}
		}
	}
}

// waitBehindOpen runs other in a transaction on one connection and, while
// it is open, call on another. The other transaction ends (rolled back)
// when call returns, or after hold. It reports whether call returned
// before that, and call's error.
func waitBehindOpen(t *testing.T, dsn, other, call string, hold time.Duration) (returned bool, err error) {
	t.Helper()
	ctx := context.Background()
	oc, wc := connect(t, dsn), connect(t, dsn)
	if _, err := oc.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.Exec(ctx, other); err != nil {
		t.Fatalf("%s: %v", other, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := wc.Exec(ctx, call)
		done <- err
	}()
	select {
	case err = <-done:
		returned = true
	case <-time.After(hold):
	}
	if _, rerr := oc.Exec(ctx, "ROLLBACK"); rerr != nil {
		t.Fatal(rerr)
	}
	if !returned {
		err = <-done
	}
	return returned, err
}
