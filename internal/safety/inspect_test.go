package safety

import (
	"context"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

// pausedInspect is what pausedInspects saw: how many inspect calls a
// pause of their backend fell into, and the first answer no instant of
// its call had (zero ID when none).
type pausedInspect struct {
	paused, calls int
	bad           string
}

// pausedInspects runs in a database of version: a holder renews a name
// of 40 ms every 5 ms; another connection calls inspect() on it without
// a pause while its backend is stopped (SIGSTOP, a paused process or VM)
// for 60 ms at random moments. A renewal returns some 35 ms before the
// expiry it replaces, so a lapsed answer with that expiry, from a call
// that began before the renewal that replaced it ended, shows a state the
// name never was in at any instant of the call: the answer mixes a
// snapshot taken before the pause with a clock read after it. It runs
// until stop says so (given the count so far) or an answer is wrong.
func pausedInspects(t *testing.T, srv *pgserver.Server, db, version string, stop func(pausedInspect) bool) pausedInspect {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	databaseAt(t, srv, db, version)
	holder, inspector := connect(t, srv.DSN(db)), connect(t, srv.DSN(db))
	var pid int
	if err := inspector.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}

	// replaced[(epoch, expiry)] is when the renewal that replaced that
	// expiry returned ok
	type key struct {
		epoch   int64
		expires time.Time
	}
	var mu sync.Mutex
	replaced := map[key]time.Time{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the holder
		defer wg.Done()
		var epoch int64
		var expires time.Time
		for ctx.Err() == nil {
			if epoch == 0 {
				var acquired bool
				if err := holder.QueryRow(ctx, "SELECT acquired, epoch, expires_at FROM lease.acquire('n', 'h', interval '40 ms')").Scan(&acquired, &epoch, &expires); err != nil || !acquired {
					epoch = 0
					continue
				}
			}
			time.Sleep(5 * time.Millisecond)
			var status string
			var next *time.Time
			if err := holder.QueryRow(ctx, "SELECT status, expires_at FROM lease.renew('n', 'h', $1, interval '40 ms')", epoch).Scan(&status, &next); err != nil || status != "ok" {
				epoch = 0 // lapsed while this goroutine was starved: a new holding
				continue
			}
			mu.Lock()
			replaced[key{epoch, expires}] = time.Now()
			mu.Unlock()
			expires = *next
		}
	}()
	wg.Add(1)
	go func() { // the pauses
		defer wg.Done()
		for ctx.Err() == nil {
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
			syscall.Kill(pid, syscall.SIGSTOP)
			time.Sleep(60 * time.Millisecond)
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	defer func() { cancel(); wg.Wait(); syscall.Kill(pid, syscall.SIGCONT) }()

	var seen pausedInspect
	for !stop(seen) {
		var held bool
		var epoch *int64
		var expires *time.Time
		start := time.Now()
		if err := inspector.QueryRow(ctx, "SELECT held, epoch, expires_at FROM lease.inspect('n')").Scan(&held, &epoch, &expires); err != nil {
			t.Fatal(err)
		}
		end := time.Now()
		seen.calls++
		if end.Sub(start) >= 60*time.Millisecond {
			seen.paused++
		}
		if held || epoch == nil || expires == nil {
			continue
		}
		// wait until the renewal that replaced it, if any, is recorded
		for time.Now().Before(expires.Add(100 * time.Millisecond)) {
			time.Sleep(10 * time.Millisecond)
		}
		mu.Lock()
		at, ok := replaced[key{*epoch, *expires}]
		mu.Unlock()
		if ok && at.Before(*expires) && start.Before(at) {
			seen.bad = "inspect began " + start.Format("15:04:05.000000") + " and answered " + end.Format("15:04:05.000000") +
				": lapsed at " + expires.Format("15:04:05.000000") + ", an expiry a renewal had replaced at " + at.Format("15:04:05.000000")
			return seen
		}
	}
	return seen
}

// TestInspectAnswersOneInstant: inspect() answers a state the name was in
// at one instant of its call, held or lapsed as at that instant, even when
// its backend is paused in the middle of the call. On 0.5.0 (the broken
// variant) it judged a snapshot taken before a pause by the clock after
// it, and said a name was lapsed that its holder had renewed in time (the
// stress run's inspect-agrees rule found it under load).
func TestInspectAnswersOneInstant(t *testing.T) {
	srv, _ := server(t)
	deadline := time.Now().Add(3 * time.Minute)
	old := pausedInspects(t, srv, "inspect_old", "0.5.0", func(s pausedInspect) bool {
		if time.Now().After(deadline) {
			t.Fatalf("0.5.0 (the broken variant): no wrong answer in %d inspects, %d of them paused, in 3 minutes", s.calls, s.paused)
		}
		return false
	})
	t.Logf("0.5.0: %s (after %d inspects, %d paused)", old.bad, old.calls, old.paused)
	want := max(3*old.paused, 100)
	cur := pausedInspects(t, srv, "inspect_new", model.PgLease.Version(), func(s pausedInspect) bool { return s.paused >= want })
	if cur.bad != "" {
		t.Fatalf("%s: %s", model.PgLease.Version(), cur.bad)
	}
	t.Logf("%s: %d inspects, %d paused, every answer of one instant", model.PgLease.Version(), cur.calls, cur.paused)
}
