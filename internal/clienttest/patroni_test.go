package clienttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/testenv"
	"github.com/pglease/pglease-gen/lease"
)

// TestPatroniFailover: the client against three members that Patroni
// (with etcd, on loopback) runs, a primary and two asynchronous replicas,
// reached as an application reaches them, through a connection string
// that names all three with target_session_attrs=read-write. The
// primary's node is lost; Patroni promotes a replica of its choosing once
// the leader key lapses (about 11 s), and the old leader, its Patroni
// started again, rejoins as a replica while the clients work on.
//   - A lease whose TTL outlasts the failover (30 s) rides it out: its
//     keep-alive's renewals fail while there is no primary, and then renew
//     it on the promoted server under the same epoch,
//     and the next grant of the name there is in the new timeline's era.
//   - A lease whose TTL does not (4 s) is lost at its local deadline,
//     while there is no primary to ask: the signal comes from the
//     monotonic clock, not from a server.
func TestPatroniFailover(t *testing.T) {
	testenv.Tools(t, "patroni", "etcd")
	ctx := context.Background()
	inst, err := pgserver.FindInstall(ctx, os.Getenv("PG_CONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pgserver.InstallFiles(model.PgLease, pglease.Files, inst); err != nil {
		t.Fatal(err)
	}
	ha, err := pgserver.StartHA(ctx, inst, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ha.Stop)
	first := ha.Nodes[0]
	// the longest TTL here is 30 s: the grace after the failover lasts as
	// long (0.5.0)
	exec(t, first.Server, "CREATE EXTENSION pg_lease", "SELECT lease.set_max_ttl(interval '30 seconds')")
	// three members: the leader and two replicas
	var replicas []*pgserver.HANode
	for range 2 {
		n, err := ha.AddNode(ctx)
		if err == nil {
			err = n.WaitReplica(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, n)
	}
	dsn := fmt.Sprintf("host=127.0.0.1,127.0.0.1,127.0.0.1 port=%d,%d,%d user=%s dbname=postgres sslmode=disable target_session_attrs=read-write connect_timeout=2",
		first.Port, replicas[0].Port, replicas[1].Port, first.User)
	// (renewals every 2 s: several fall in the failover and fail)
	long, longLog := clientAt(t, dsn, lease.Config{TTL: 30 * time.Second, RenewEvery: 2 * time.Second})
	short, _ := clientAt(t, dsn, lease.Config{TTL: 4 * time.Second})
	kept, err := long.Acquire(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	lapsing, err := short.Acquire(ctx, "lapsing")
	if err != nil {
		t.Fatal(err)
	}
	// both grants on both replicas before the loss (asynchronous: wait)
	for _, r := range replicas {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			r1, r2 := inspect(t, r.Server, "kept"), inspect(t, r.Server, "lapsing")
			if r1.held && r2.held {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the grants did not reach the replica %s", r.Name)
			}
		}
	}
	lost := time.Now()
	if err := first.Lose(); err != nil {
		t.Fatal(err)
	}
	// Patroni, not the test, picks the replica it promotes
	second := promotedOf(ctx, t, replicas)
	promoted := time.Since(lost)
	t.Logf("Patroni promoted %s %.1f s after %s was lost", second.Name, promoted.Seconds(), first.Name)
	// and the old leader rejoins as a replica (its Patroni started again
	// rewinds it with pg_rewind), while the clients work on
	rejoin := make(chan error, 1)
	go func() { rejoin <- first.Rejoin(ctx) }()

	// the short lease ended at its deadline, during the failover
	select {
	case <-lapsing.Done():
	default:
		t.Fatalf("the 4 s lease is not lost %.1f s after the primary was", promoted.Seconds())
	}
	var le *lease.LostError
	if !errors.As(lapsing.Err(), &le) || le.Reason != "deadline" {
		t.Errorf("the 4 s lease ended with %v; want a LostError for its deadline", lapsing.Err())
	}

	// the long lease is renewed on the promoted server: wait for a renewal
	// there (its expiry moves), then check it is the same holding
	before := expiry(t, second.Server, "kept")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if err := kept.Err(); err != nil {
			t.Fatalf("the 30 s lease was lost across the failover: %v\n%s", err, longLog)
		}
		if expiry(t, second.Server, "kept").After(before) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no renewal reached the promoted server within 30 s; the client's log:\n%s", longLog)
		}
	}
	if r := inspect(t, second.Server, "kept"); !r.held || *r.owner != kept.Owner || *r.epoch != kept.Epoch {
		t.Fatalf("on the promoted server: held %v by %v at %v; the lease is %s at %d", r.held, r.owner, r.epoch, kept.Owner, kept.Epoch)
	}
	if err := <-rejoin; err != nil {
		t.Fatalf("the old leader did not rejoin: %v", err)
	}
	t.Logf("%s rejoined as a replica %.1f s after it was lost", first.Name, time.Since(lost).Seconds())
	if err := kept.Err(); err != nil {
		t.Fatalf("the 30 s lease was lost while the old leader rejoined: %v\n%s", err, longLog)
	}
	if err := kept.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// the promotion may have lost grants and renewals: the promoted
	// server gives the name to nobody new until the longest TTL (30 s,
	// plus 1%) has passed since it entered its era, at its first grant
	// tried (this one), whatever the client does
	tried := time.Now()
	var graceUntil time.Time
	var next *lease.Lease
	for {
		next, err = long.TryAcquire(ctx, "kept")
		var ge *lease.GraceError
		if errors.As(err, &ge) {
			graceUntil = ge.Until
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	defer next.Release(ctx)
	if graceUntil.IsZero() {
		t.Error("the first grant after the promotion was not refused: no grace")
	}
	t.Logf("after the promotion the grace refused new holders for %.1f s (until %s)", time.Since(tried).Seconds(), graceUntil.Format(time.RFC3339Nano))
	// the promotion's new timeline is a new era: its band is above the old
	if band := func(e int64) int64 { return (e - 1) >> 32 }; band(next.Epoch) <= band(kept.Epoch) {
		t.Errorf("the grant after the failover has epoch %d, in the band of %d before it", next.Epoch, kept.Epoch)
	}
	t.Logf("kept %d across the failover; the next grant %d", kept.Epoch, next.Epoch)
}

// promotedOf waits until Patroni has promoted one of replicas, and
// returns it.
func promotedOf(ctx context.Context, t *testing.T, replicas []*pgserver.HANode) *pgserver.HANode {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, r := range replicas {
			if role, err := r.Role(); err == nil && role == "primary" {
				if err := r.WaitPrimary(ctx); err != nil {
					t.Fatal(err)
				}
				return r
			}
		}
	}
	t.Fatal("Patroni promoted no replica within a minute")
	return nil
}

// expiry is the name's expiry on srv (a lease there has one).
func expiry(t *testing.T, srv *pgserver.Server, name string) time.Time {
	t.Helper()
	r := inspect(t, srv, name)
	if r.expires == nil {
		t.Fatalf("%s has no expiry on %s", name, srv.Dir)
	}
	return *r.expires
}
