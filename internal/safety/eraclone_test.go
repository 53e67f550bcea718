package safety

import (
	"context"
	"testing"
	"time"
)

// CREATE DATABASE ... TEMPLATE copies every file of the template,
// era_now's (unlogged) too: the copy starts with its template's era
// row, valid for this run of the server. 0.4.0 ties the row to the
// database it was entered in, so the copy enters an era of its own above
// the template's, and the two never give the same epoch of a name. The
// variant that does not check the row's database grants in the template's
// band, the same epochs as the template (what the first 0.4.0 did).
func TestTemplateCloneEntersNewEra(t *testing.T) {
	srv, inst := server(t)
	installVariant(t, inst, "pg_lease_clone_blind")
	ctx := context.Background()
	for _, c := range []struct {
		ext  string
		safe bool
	}{{"pg_lease", true}, {"pg_lease_clone_blind", false}} {
		t.Run(c.ext, func(t *testing.T) {
			src := "clone_src_" + c.ext
			dsn := database(t, srv, src, c.ext)
			acquire := func(dsn, name, owner string) int64 {
				t.Helper()
				conn := connect(t, dsn)
				defer conn.Close(ctx)
				var epoch int64
				if err := conn.QueryRow(ctx, "SELECT epoch FROM lease.acquire($1, $2, interval '1 minute') WHERE acquired", name, owner).Scan(&epoch); err != nil {
					t.Fatalf("acquire %s: %v", name, err)
				}
				return epoch
			}
			first := acquire(dsn, "a", "w1")
			conn := connect(t, dsn)
			if _, err := conn.Exec(ctx, "SELECT lease.release('a', 'w1', $1)", first); err != nil {
				t.Fatal(err)
			}
			conn.Close(ctx)
			// the template must have no session: closed connections end
			// their backends a moment later (CREATE DATABASE waits 5 s)
			time.Sleep(100 * time.Millisecond)
			clone := "clone_of_" + c.ext
			mustExec(t, srv.DSN("postgres"), "CREATE DATABASE "+clone+" TEMPLATE "+src)
			fromClone := acquire(srv.DSN(clone), "a", "w2")
			newInClone := acquire(srv.DSN(clone), "b", "w2")
			fromSource := acquire(dsn, "a", "w3")
			band := func(e int64) int64 { return e >> 32 }
			overlap := band(fromClone) <= band(fromSource) || band(newInClone) <= band(fromSource)
			switch {
			case c.safe && overlap:
				t.Errorf("the copy granted a in band %d (epoch %d) and b in band %d, its template a in band %d (epoch %d): the copy must grant above its template's era",
					band(fromClone), fromClone, band(newInClone), band(fromSource), fromSource)
			case !c.safe && !overlap:
				t.Errorf("the variant without the database check granted above its template too (epochs %d and %d): the test proves nothing", fromClone, fromSource)
			case !c.safe:
				t.Logf("without the database check: the copy granted a epoch %d, its template a epoch %d", fromClone, fromSource)
			default:
				t.Logf("the copy granted a epoch %d and b epoch %d, its template a epoch %d", fromClone, newInClone, fromSource)
			}
		})
	}
}
