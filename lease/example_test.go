package lease_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/lease"
)

// Run a job under a lease: fn's context ends if the lease is lost, and
// the lease is released when fn returns.
func ExampleClient_Run() {
	c, err := lease.New("postgres://app@db.example/app", lease.Config{TTL: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	err = c.Run(context.Background(), "nightly-report", func(ctx context.Context, l *lease.Lease) error {
		// do the work; stop when ctx ends
		<-ctx.Done()
		return nil
	})
	var lost *lease.LostError
	if errors.As(err, &lost) {
		log.Printf("stopped: %v", lost)
	}
}

// Fence a write in PostgreSQL: the guard and the write commit together,
// or not at all. A serialization failure (40001) is retried with the
// whole transaction.
func ExampleLease_Guard() {
	ctx := context.Background()
	c, _ := lease.New("postgres://app@db.example/app", lease.Config{TTL: 30 * time.Second})
	l, err := c.Acquire(ctx, "account-42")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	db, _ := pgx.Connect(ctx, "postgres://app@db.example/app")
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := l.Guard(ctx, tx); err != nil {
			return err // a *lease.LostError: stop writing under this lease
		}
		_, err := tx.Exec(ctx, "UPDATE accounts SET balance = balance - 10 WHERE id = 42")
		return err
	})
	if err != nil {
		log.Print(err)
	}
}

// Fence a write outside PostgreSQL: the store keeps the largest epoch it
// has seen and refuses older ones. Epochs are compared, never subtracted.
func ExampleLease_Epoch() {
	ctx := context.Background()
	c, _ := lease.New("postgres://app@db.example/app", lease.Config{TTL: 30 * time.Second})
	l, err := c.Acquire(ctx, "bucket/reports")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	// in the store, for example SQL on another database:
	//   UPDATE objects SET body = $2, epoch = $1 WHERE key = 'report' AND epoch <= $1
	// zero rows updated: a newer holder wrote first; stop.
	fmt.Println("write with fencing token", l.Epoch)
}

// Hold a lease until the process ends or the lease is lost.
func ExampleLease_Done() {
	ctx := context.Background()
	c, _ := lease.New("postgres://app@db.example/app", lease.Config{TTL: 10 * time.Second})
	l, err := c.Acquire(ctx, "singleton")
	if err != nil {
		log.Fatal(err)
	}
	<-l.Done()
	log.Printf("lease ended: %v", l.Err())
}

// Check the lease right before each side effect: Err reads the clock,
// so a process that was paused past its deadline sees the loss in its
// first check after the pause, before its timers have run.
func ExampleLease_Err() {
	ctx := context.Background()
	c, _ := lease.New("postgres://app@db.example/app", lease.Config{TTL: 10 * time.Second})
	l, err := c.Acquire(ctx, "mailer")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	for _, msg := range []string{"a", "b", "c"} {
		if err := l.Err(); err != nil {
			log.Printf("stopping: %v", err)
			return
		}
		fmt.Println("send", msg, "with fencing token", l.Epoch)
	}
}

// Lead until the term ends, then campaign again; Resign hands over at
// once.
func ExampleElection_Campaign() {
	ctx := context.Background()
	c, _ := lease.New("postgres://app@db.example/app", lease.Config{TTL: 10 * time.Second, Owner: "worker-1"})
	defer c.Close()
	e := c.Election("scheduler")
	l, err := e.Campaign(ctx) // waits until this client leads
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-l.Done(): // lost: stop leading
	case <-time.After(time.Hour): // a planned hand-over
		e.Resign(ctx)
	}
}

// Ask who leads now.
func ExampleElection_Leader() {
	ctx := context.Background()
	c, _ := lease.New("postgres://app@db.example/app", lease.Config{TTL: 10 * time.Second})
	defer c.Close()
	h, err := c.Election("scheduler").Leader(ctx)
	switch {
	case errors.Is(err, lease.ErrNoLeader):
		fmt.Println("nobody leads")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println(h.Owner, "leads with epoch", h.Epoch)
	}
}

// Follow every leader.
func ExampleElection_Observe() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, _ := lease.New("postgres://app@db.example/app", lease.Config{TTL: 10 * time.Second})
	defer c.Close()
	for h := range c.Election("scheduler").Observe(ctx) {
		if h.Err != nil {
			log.Fatal(h.Err)
		}
		if h.Held {
			fmt.Println("leader:", h.Owner, "epoch", h.Epoch)
		}
	}
}

// Resign when the work is done, so the next candidate leads at once
// (instead of after the TTL).
func ExampleElection_Resign() {
	ctx := context.Background()
	c, _ := lease.New("postgres://app@db.example/app", lease.Config{TTL: 10 * time.Second})
	defer c.Close()
	e := c.Election("migrations")
	if _, err := e.Campaign(ctx); err != nil {
		log.Fatal(err)
	}
	// run the migrations, then
	if err := e.Resign(ctx); err != nil {
		log.Print(err) // not told: the name lapses at its TTL
	}
}
