package safety

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// 0.4.0's acquire takes the era's band from its plan: era_first() and
// era_last() are folded into the statement when it is planned, and the
// trigger on era_now replaces era_mark() so that PostgreSQL plans it
// again. These
// tests prove that a session whose plans were made before follows what
// another session does to era_now: a new era entered, and era_now
// emptied (what a crash does; a crash also ends every session, so this
// is the harder case). The variant without the trigger shows what they
// catch: grants in a band the database has left, and no era entered
// after era_now was emptied. Both must complete a call whose plan holds a
// band below the name's epoch.
func TestPlansFollowTheEra(t *testing.T) {
	srv, inst := server(t)
	installVariant(t, inst, "pg_lease_stale_plans")
	for _, c := range []struct {
		ext     string
		follows bool
	}{{"pg_lease", true}, {"pg_lease_stale_plans", false}} {
		t.Run(c.ext, func(t *testing.T) {
			dsn := database(t, srv, "plans_"+c.ext, c.ext)
			problems := planFollowing(t, connect(t, dsn), connect(t, dsn))
			switch {
			case c.follows && len(problems) > 0:
				t.Errorf("a session's plans did not follow the era:\n%s", strings.Join(problems, "\n"))
			case !c.follows && len(problems) == 0:
				t.Errorf("the variant without the trigger followed the era too: the test proves nothing")
			case !c.follows:
				t.Logf("without the trigger: %s", strings.Join(problems, "; "))
			}
		})
	}
}

// planFollowing makes a's plans (generic ones: PL/pgSQL makes those after
// five custom plans of a statement), then changes era_now from b and
// returns what a did wrong after each change.
func planFollowing(t *testing.T, a, b *pgx.Conn) []string {
	ctx := context.Background()
	fresh := 0
	// take acquires name through a, releases it, and returns the band of
	// the epoch it was granted
	take := func(name string) int64 {
		t.Helper()
		var epoch int64
		if err := a.QueryRow(ctx, "SELECT epoch FROM lease.acquire($1, 'a', interval '1 minute')", name).Scan(&epoch); err != nil {
			t.Fatalf("acquire %s: %v", name, err)
		}
		if _, err := a.Exec(ctx, "SELECT lease.release($1, 'a', $2)", name, epoch); err != nil {
			t.Fatalf("release %s: %v", name, err)
		}
		return (epoch - 1) / (1 << 32)
	}
	// grants takes a known name (acquire's UPDATE) and a new one (its
	// INSERT), and says where either was not granted in band want
	grants := func(when string, want int64) []string {
		var out []string
		fresh++
		for _, name := range []string{"w", fmt.Sprintf("new%d", fresh)} {
			if got := take(name); got != want {
				out = append(out, fmt.Sprintf("%s: %s granted in band %d, the era's is %d", when, name, got, want))
			}
		}
		return out
	}
	for i := range 10 {
		take("w")
		take(fmt.Sprintf("warm%d", i))
	}
	var problems []string

	var band int64
	if err := b.QueryRow(ctx, "SELECT band FROM lease.new_era()").Scan(&band); err != nil {
		t.Fatal(err)
	}
	problems = append(problems, grants("after another session's new_era()", band)...)

	// A name granted in the new era by b: a's acquire must complete in
	// that era whatever band its plan holds (a stale plan's UPDATE finds
	// the epoch above its band; the call settles the era and reads
	// era_now itself), within the statement_timeout set here.
	var epoch int64
	if err := b.QueryRow(ctx, "SELECT epoch FROM lease.acquire('x', 'b', interval '1 minute')").Scan(&epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(ctx, "SELECT lease.release('x', 'b', $1)", epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, "SET statement_timeout = '10s'"); err != nil {
		t.Fatal(err)
	}
	if got := take("x"); got != band {
		t.Errorf("x, granted in band %d by another session, granted to a in band %d", band, got)
	}

	// An era entered in a transaction that rolls back: the plans a made
	// inside it (with the band of an era that was never recorded) must
	// not outlive it.
	if _, err := a.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	var gone int64
	if err := a.QueryRow(ctx, "SELECT band FROM lease.new_era()").Scan(&gone); err != nil {
		t.Fatal(err)
	}
	inside := take("w")
	if _, err := a.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if inside != gone {
		problems = append(problems, fmt.Sprintf("inside the transaction that entered band %d: w granted in band %d", gone, inside))
	}
	problems = append(problems, grants("after a rolled-back new_era()", band)...)

	if _, err := b.Exec(ctx, "DELETE FROM lease.era_now"); err != nil {
		t.Fatal(err)
	}
	got := take("w")
	var now int64
	var current bool
	if err := b.QueryRow(ctx, "SELECT band, current FROM lease.current_era()").Scan(&now, &current); err != nil {
		t.Fatal(err)
	}
	if !current || now <= band || got != now {
		problems = append(problems, fmt.Sprintf("after era_now was emptied: w granted in band %d; the era is band %d (current %v), before it %d", got, now, current, band))
	}
	return problems
}
