package clienttest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/lease"
)

// TestCutDuringCall: an acquire whose connection is lost while it runs
// has an unknown outcome, which the client must settle before it reports
// anything; what it reports must be what the server did. Three cuts, each
// on the client's open connection (a proxy on loopback):
//   - the reply is lost: the server granted, and the client must say so,
//     with the epoch inspect shows;
//   - the request is lost: the server did nothing, and the client must
//     report a failure with the name not held;
//   - the connection is closed while the statement still runs (a trigger
//     makes it take 600 ms; the cut comes at 200 ms), and the cancel
//     request that pgx sends then is lost on its way (as with a load
//     balancer that routes it to another node): the server goes on and
//     commits the grant after the cut. A client that looks at the name at
//     once sees it free and reports a failure while its grant stands;
//     this one waits for the session that sent the acquire to be done.
func TestCutDuringCall(t *testing.T) {
	srv := server(t)
	slowWrites(t, srv, "INSERT", "NEW.name = 'cut-slow'", 0.6)
	p := newProxy(t, srv)
	c, lg := clientAt(t, p.dsn(srv), lease.Config{TTL: 10 * time.Second, CallTimeout: 2 * time.Second, Owner: "cut"})
	ctx := context.Background()
	// a call first, so that the client's connection is open to be cut
	warm := func() {
		t.Helper()
		l, err := c.TryAcquire(ctx, "cut-warm")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		cut     func()
		granted bool // what the server does
	}{
		{"cut-reply", func() { p.cut(dropReplies) }, true},
		{"cut-request", func() { p.cut(dropRequests) }, false},
		{"cut-slow", func() { p.lossyCancels.Store(true); time.AfterFunc(200*time.Millisecond, p.closeAll) }, true},
	} {
		warm()
		tc.cut()
		l, err := c.TryAcquire(ctx, tc.name)
		// what the server did, once any statement of the cut session is
		// over (the slow one ends 400 ms after its cut)
		time.Sleep(time.Second)
		r := inspect(t, srv, tc.name)
		ours := r.held && strings.HasPrefix(*r.owner, "cut#")
		switch {
		case err == nil && (!ours || *r.owner != l.Owner || *r.epoch != l.Epoch):
			t.Errorf("%s: the client reports a grant (%s, epoch %d) that the server does not hold: held %v by %v at %v\n%s", tc.name, l.Owner, l.Epoch, r.held, r.owner, r.epoch, lg)
		case err != nil && ours:
			t.Errorf("%s: the client reported the acquire failed (%v), but its grant stands: held by %s at epoch %d\n%s", tc.name, err, *r.owner, *r.epoch, lg)
		case (err == nil) != tc.granted:
			t.Errorf("%s: granted %v, want %v (err %v)\n%s", tc.name, err == nil, tc.granted, err, lg)
		default:
			t.Logf("%s: reported %v, the server agrees", tc.name, errOrEpoch(l, err))
		}
		if err == nil {
			l.Release(ctx)
		}
	}
	if !strings.Contains(lg.String(), "an acquire with an unknown outcome was granted") {
		t.Errorf("no acquire was settled by inspect:\n%s", lg)
	}
	if t.Failed() {
		b, _ := os.ReadFile(filepath.Join(srv.Dir, "server.log"))
		t.Logf("the server's log:\n%s", b)
	}
}

func errOrEpoch(l *lease.Lease, err error) string {
	if err != nil {
		return err.Error()
	}
	return "epoch " + strconv.FormatInt(l.Epoch, 10)
}

// TestRunsDoNotOverlap: two clients run Run on one name. The first holds
// it and is cut off from the server (a partition at the proxy it
// connects through: its renewals go unanswered); the second waits on a
// connection of its own and gets the name when the server lets the lease
// lapse. The first's function must see its context end before the
// second's function starts: the lost-lease signal is never late, with the
// server's clock and the client's on this machine.
func TestRunsDoNotOverlap(t *testing.T) {
	srv := server(t)
	p := newProxy(t, srv)
	// a margin of 600 ms, not the default 200: the test runs beside
	// others (go test ./...), and a timer can fire late on a busy machine
	a, alg := clientAt(t, p.dsn(srv), lease.Config{TTL: 2 * time.Second, Margin: 600 * time.Millisecond, CallTimeout: 300 * time.Millisecond})
	b, _ := client(t, srv, lease.Config{TTL: 2 * time.Second})
	var (
		mu             sync.Mutex
		aEnd, bStart   time.Time
		aEpoch, bEpoch int64
		aRenewedBefore bool
		started, aDone = make(chan struct{}), make(chan error, 1)
		bDone          = make(chan error, 1)
		partitioned    time.Time
	)
	go func() {
		aDone <- a.Run(context.Background(), "overlap", func(ctx context.Context, l *lease.Lease) error {
			first := l.Deadline()
			aEpoch = l.Epoch
			close(started)
			// a renewal (every 667 ms) before the partition
			for end := time.Now().Add(3 * time.Second); !l.Deadline().After(first) && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
			}
			mu.Lock()
			aRenewedBefore = l.Deadline().After(first)
			partitioned = time.Now()
			mu.Unlock()
			p.partition()
			<-ctx.Done()
			mu.Lock()
			aEnd = time.Now()
			mu.Unlock()
			return nil
		})
	}()
	<-started
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		bDone <- b.Run(ctx, "overlap", func(ctx context.Context, l *lease.Lease) error {
			mu.Lock()
			bStart, bEpoch = time.Now(), l.Epoch
			mu.Unlock()
			return nil
		})
	}()
	if err := <-bDone; err != nil {
		t.Fatalf("the second client's Run: %v", err)
	}
	mu.Lock()
	ended, start, renewed, cutAt := aEnd, bStart, aRenewedBefore, partitioned
	mu.Unlock()
	if !renewed {
		t.Errorf("the first lease was not renewed before the partition: no traffic before the fault\n%s", alg)
	}
	if ended.IsZero() || !ended.Before(start) {
		t.Errorf("the two functions overlap: the second started %v after the partition, and the first's context had not ended then (ended: %v)\n%s",
			start.Sub(cutAt).Round(time.Millisecond), !ended.IsZero(), alg)
	} else {
		t.Logf("the first function's context ended %v after the partition, %v before the second started (epochs %d then %d)",
			ended.Sub(cutAt).Round(time.Millisecond), start.Sub(ended).Round(time.Millisecond), aEpoch, bEpoch)
	}
	if bEpoch <= aEpoch {
		t.Errorf("the second holder's epoch %d is not above the first's %d", bEpoch, aEpoch)
	}
	p.heal()
	select {
	case err := <-aDone:
		var lost *lease.LostError
		if !errors.As(err, &lost) {
			t.Errorf("the first client's Run returned %v; want its loss", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the first client's Run did not return within 5 s of the healed partition")
	}
}

// TestKeepAliveWhileCallsBusy: the client renews on a connection of its
// own, so that its calls, however many wait for their connection, do not
// hold up the renewals. Ten acquires of 400 ms each (a trigger sleeps)
// queue for the calls' connection for 4 s, while a lease with a 3 s TTL
// (renewed every second, lost 2.7 s after the last renewal's send) must
// stay held.
func TestKeepAliveWhileCallsBusy(t *testing.T) {
	srv := server(t)
	slowWrites(t, srv, "INSERT", "NEW.name LIKE 'busy-%'", 0.4)
	c, lg := client(t, srv, lease.Config{TTL: 3 * time.Second})
	ctx := context.Background()
	l, err := c.TryAcquire(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	before := l.Deadline()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := c.TryAcquire(ctx, "busy-"+strconv.Itoa(i))
			if err != nil {
				t.Error(err)
				return
			}
			b.Release(ctx)
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if err := l.Err(); err != nil {
		t.Fatalf("the lease was lost while the client's calls connection was busy (%v of calls): %v\n%s", took.Round(time.Millisecond), err, lg)
	}
	// renewed every second: the last came within about a second of the
	// end (half a second more for a busy machine)
	if !l.Deadline().After(before.Add(took - 1500*time.Millisecond)) {
		t.Errorf("the deadline moved by %v during %v of calls: renewals were held up", l.Deadline().Sub(before), took)
	}
	t.Logf("held through %v of calls; the deadline moved by %v", took.Round(time.Millisecond), l.Deadline().Sub(before).Round(time.Millisecond))
	assertHeld(t, srv, "kept", l)
	l.Release(ctx)
}

func assertHeld(t *testing.T, srv *pgserver.Server, name string, l *lease.Lease) {
	t.Helper()
	if r := inspect(t, srv, name); !r.held || *r.owner != l.Owner || *r.epoch != l.Epoch {
		t.Errorf("inspect %s: held %v by %v at %v; the lease is %s at %d", name, r.held, r.owner, r.epoch, l.Owner, l.Epoch)
	}
}
