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
