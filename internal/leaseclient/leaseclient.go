// Package leaseclient is pg_lease's SQL interface written once in Go:
// CREATE EXTENSION and the lease.* calls the stress test, the benchmark,
// the fuzzer and the safety tests make (acquire, renew, release, inspect,
// guard, purge), with typed results, so that a change of one of their
// signatures is made in one place. internal/faults writes its own SQL:
// its clients must see COMMIT's warning and failure themselves.
//
// Arguments are Go values that pgx encodes (string, int64, time.Duration),
// nil for NULL, or, for an interval, a string in PostgreSQL's interval
// syntax (the fuzzer passes every shape).
package leaseclient

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pglease/pglease-gen/internal/model"
)

// Querier is a connection or a transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// The SQL of each call.
var (
	CreateSQL  = "CREATE EXTENSION " + model.PgLease.Name
	AcquireSQL = "SELECT acquired, epoch, expires_at FROM lease.acquire($1, $2, $3::interval, $4::interval)"
	RenewSQL   = "SELECT status, expires_at FROM lease.renew($1, $2, $3, $4::interval)"
	ReleaseSQL = "SELECT lease.release($1, $2, $3)"
	InspectSQL = "SELECT held, owner, epoch, expires_at FROM lease.inspect($1)"
	GuardSQL   = "SELECT lease.guard($1, $2, $3)"
	PurgeSQL   = "SELECT lease.purge($1::interval)"
)

// Create installs pg_lease in the connected database.
func Create(ctx context.Context, q Querier) error {
	_, err := q.Exec(ctx, CreateSQL)
	return err
}

// Grant is acquire's result: (true, epoch, expiry) or (false, NULL, NULL).
type Grant struct {
	Acquired bool
	Epoch    *int64
	Expires  *time.Time
}

// Acquire calls lease.acquire(name, owner, ttl, max_wait); a nil maxWait
// does not wait.
func Acquire(ctx context.Context, q Querier, name, owner, ttl, maxWait any) (Grant, error) {
	var g Grant
	err := q.QueryRow(ctx, AcquireSQL, name, owner, ttl, maxWait).Scan(&g.Acquired, &g.Epoch, &g.Expires)
	return g, err
}

// Renewal is renew's result: a status and, when ok, the new expiry.
type Renewal struct {
	Status  string
	Expires *time.Time
}

// Renew calls lease.renew(name, owner, epoch, ttl).
func Renew(ctx context.Context, q Querier, name, owner, epoch, ttl any) (Renewal, error) {
	var r Renewal
	err := q.QueryRow(ctx, RenewSQL, name, owner, epoch, ttl).Scan(&r.Status, &r.Expires)
	return r, err
}

// Release calls lease.release(name, owner, epoch) and returns its status.
func Release(ctx context.Context, q Querier, name, owner, epoch any) (string, error) {
	var status string
	err := q.QueryRow(ctx, ReleaseSQL, name, owner, epoch).Scan(&status)
	return status, err
}

// State is inspect's row.
type State struct {
	Held    bool
	Owner   *string
	Epoch   *int64
	Expires *time.Time
}

// Inspect calls lease.inspect(name).
func Inspect(ctx context.Context, q Querier, name any) (State, error) {
	var s State
	err := q.QueryRow(ctx, InspectSQL, name).Scan(&s.Held, &s.Owner, &s.Epoch, &s.Expires)
	return s, err
}

// Guard calls lease.guard(name, owner, epoch) and returns the lease's
// expiry; q should be a transaction, which the guard lasts for. A failed
// guard is an error with SQLSTATE 55000 and the status as its detail.
func Guard(ctx context.Context, q Querier, name, owner, epoch any) (time.Time, error) {
	var exp time.Time
	err := q.QueryRow(ctx, GuardSQL, name, owner, epoch).Scan(&exp)
	return exp, err
}

// Purge calls lease.purge(grace) and returns how many names it deleted.
func Purge(ctx context.Context, q Querier, grace any) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, PurgeSQL, grace).Scan(&n)
	return n, err
}
