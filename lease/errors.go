package lease

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNotAcquired: TryAcquire found the name held by another owner.
	ErrNotAcquired = errors.New("lease: held by another owner")
	// ErrReleased: the lease was released by its holder (Lease.Err after
	// Release).
	ErrReleased = errors.New("lease: released")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("lease: client closed")
	// ErrAlreadyHeld: this client holds the name already (a second grant
	// to the same client would only wait for itself).
	ErrAlreadyHeld = errors.New("lease: this client holds it already")
	// ErrOldExtension: the database's pg_lease has no sessions (before
	// 0.5.0), which this client needs; the error that wraps it names the
	// version. Waiting does not help: update the extension.
	ErrOldExtension = errors.New("lease: pg_lease is older than 0.5.0")
)

// GraceError: the server is in its grace after a fault that may have
// lost grants or renewals (pg_lease 0.5.0: a crash, a promotion, a
// restore): it gives no name to a new holder until Until (the server's
// clock), so that every holder it may have forgotten has stopped acting.
// Holders it knows keep renewing. errors.Is(err, ErrNotAcquired) holds.
type GraceError struct {
	Name  string
	Until time.Time
}

func (e *GraceError) Error() string {
	return fmt.Sprintf("lease %q: not acquired: the server gives no name to a new holder until its grace after a fault ends at %s",
		e.Name, e.Until.UTC().Format(time.RFC3339Nano))
}

// Is makes a GraceError an ErrNotAcquired.
func (e *GraceError) Is(target error) bool { return target == ErrNotAcquired }

// LostError says a held lease is lost: the server answered a renewal (or
// the session's keep-alive) with not_owner, epoch_mismatch or lapsed, no
// renewal succeeded before the local deadline, or after a change of the
// server's era (a failover, a restore) the server no longer holds the
// name under the client's session. Work fenced by the lease's epoch must
// stop.
type LostError struct {
	Name   string
	Epoch  int64
	Reason string // not_owner, epoch_mismatch, lapsed, "deadline" (no renewal in time), "era" (the grant lost with the server's history) or "released" (released by another session that gave its owner and epoch)
	Cause  error  // the last error of a renewal, for "deadline"
}

func (e *LostError) Error() string {
	if e.Reason == "deadline" {
		return fmt.Sprintf("lease %q (epoch %d) lost: no renewal succeeded before the local deadline: %v", e.Name, e.Epoch, e.Cause)
	}
	if e.Reason == "era" {
		return fmt.Sprintf("lease %q (epoch %d) lost: the server changed era (a failover or a restore) and no longer holds it under the client's session", e.Name, e.Epoch)
	}
	if e.Reason == "released" {
		return fmt.Sprintf("lease %q (epoch %d) lost: another session released it with its owner and epoch", e.Name, e.Epoch)
	}
	return fmt.Sprintf("lease %q (epoch %d) lost: the server says %s", e.Name, e.Epoch, e.Reason)
}

func (e *LostError) Unwrap() error { return e.Cause }
