package safety

import (
	"context"
	"fmt"
	"testing"

	"github.com/pglease/pglease-gen/internal/pgserver"
)

// TestChangesAtOffOutliveACrash: a grant and a release commit at
// synchronous_commit = on at least, whatever the session's (the floor,
// on by default), so that a crash cannot lose what a caller was told.
// 0.5.0's scripts raise it inline, without durable()'s call, when the
// floor is on and the session below it. With the WAL writer held back, a
// session at off takes one name and releases another (granted durably
// before); after kill -9 and crash recovery the first is at its epoch
// and the second released. The variant's inline branch does nothing:
// both changes are lost.
func TestChangesAtOffOutliveACrash(t *testing.T) {
	inline := "IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN"
	v := eraVariant{name: "pg_lease_floor_not_raised", all: true, edits: [][2]string{{
		inline, inline + " NULL; ELSIF false THEN"}}}
	ctx := context.Background()
	eachOf(t, v, []string{"autovacuum=off"}, func(t *testing.T, srv *pgserver.Server, ext string) (bool, string) {
		dsn := database(t, srv, "floor", ext)
		// (b durable; the era entered before the WAL writer stops)
		conn := connect(t, dsn)
		var held int64
		if err := conn.QueryRow(ctx, "SELECT epoch FROM lease.acquire('b', 'w0', interval '1 minute') WHERE acquired").Scan(&held); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.PauseWALWriter(ctx); err != nil {
			t.Fatal(err)
		}
		var granted int64
		var released string
		for _, q := range []struct {
			sql  string
			args []any
			into any
		}{
			{"SET synchronous_commit = off", nil, nil},
			{"SELECT epoch FROM lease.acquire('a', 'w1', interval '1 minute') WHERE acquired", nil, &granted},
			{"SELECT lease.release('b', 'w0', $1)", []any{held}, &released},
		} {
			var err error
			if q.into == nil {
				_, err = conn.Exec(ctx, q.sql, q.args...)
			} else {
				err = conn.QueryRow(ctx, q.sql, q.args...).Scan(q.into)
			}
			if err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
		if released != "ok" {
			t.Fatalf("release: %s", released)
		}
		conn.Close(ctx)
		killRestart(t, srv)
		var aEpoch, bEpoch *int64
		var bOwner *string
		after := connect(t, dsn)
		if err := after.QueryRow(ctx, "SELECT (SELECT epoch FROM lease.leases WHERE name = 'a'), epoch, owner FROM lease.leases WHERE name = 'b'").Scan(&aEpoch, &bEpoch, &bOwner); err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("granted a at %d and released b (epoch %d) at synchronous_commit = off; after the crash a's row has %s, b's %s owned by %s",
			granted, held, show(aEpoch), show(bEpoch), show(bOwner))
		return aEpoch == nil || *aEpoch != granted || bOwner != nil || bEpoch == nil || *bEpoch != held+1, what
	})
}

func show[T any](p *T) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprint(*p)
}
