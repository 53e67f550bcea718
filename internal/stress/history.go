// Package stress runs many clients against pg_lease at once, records every
// call with its client-side start and end times, and checks the history
// and the final table against the lease's guarantees (the checker is in
// check.go). The server must run on this machine, so that the server's
// clock_timestamp() and the client's clock are the same clock.
package stress

import (
	"fmt"
	"time"
)

// Kind of call.
type Kind string

const (
	Acquire Kind = "acquire"
	Renew   Kind = "renew"
	Release Kind = "release"
	Inspect Kind = "inspect"
	// Guard is a transaction of lease.guard, a write into FencedTable
	// and a commit; Purge is lease.purge(grace), which has no name.
	Guard Kind = "guard"
	Purge Kind = "purge"
)

// FencedTable is the table the guarded transactions write into: one row
// per guarded write, so the checker knows which committed.
const FencedTable = "pglease_stress_fenced"

// Op is one call and its outcome.
type Op struct {
	ID      int
	Client  int
	Seq     int // the client's own count of its calls
	Kind    Kind
	Name    string
	Owner   string
	Epoch   int64         // renew, release: the token passed
	TTL     time.Duration // acquire, renew
	MaxWait time.Duration // acquire: 0 is non-blocking
	Grace   time.Duration // purge
	Hold    time.Duration // guard: how long the transaction stays open after the guard
	Start   time.Time
	End     time.Time
	// RolledBack: the call ran in a transaction that was rolled back, so
	// it changed nothing that anyone could see.
	RolledBack bool

	// Outcome. Err is the SQLSTATE of an error ("" for success); Unknown is
	// set when the outcome could not be learned (the connection failed).
	Err     string
	ErrMsg  string
	Unknown bool

	Acquired bool       // acquire
	Status   string     // renew, release
	Held     bool       // inspect
	RetOwner *string    // inspect
	RetEpoch *int64     // acquire, inspect
	Expires  *time.Time // acquire, renew, inspect, guard
	Purged   int64      // purge
	// guard: when the COMMIT was sent, and whether the guarded write is
	// in FencedTable at the end (it committed)
	CommitAt time.Time
	Written  bool
}

func (o Op) String() string {
	s := fmt.Sprintf("#%d c%d %s(%s", o.ID, o.Client, o.Kind, o.Name)
	switch o.Kind {
	case Acquire:
		s += fmt.Sprintf(", %s, %s, wait %s)", o.Owner, o.TTL, o.MaxWait)
	case Renew:
		s += fmt.Sprintf(", %s, %d, %s)", o.Owner, o.Epoch, o.TTL)
	case Release, Guard:
		s += fmt.Sprintf(", %s, %d)", o.Owner, o.Epoch)
	case Purge:
		s = fmt.Sprintf("#%d c%d purge(%s)", o.ID, o.Client, o.Grace)
	default:
		s += ")"
	}
	s += fmt.Sprintf(" [%s .. %s]", o.Start.Format("15:04:05.000000"), o.End.Format("15:04:05.000000"))
	if o.RolledBack {
		s += " rolled back"
	}
	switch {
	case o.Unknown:
		s += " -> unknown: " + o.ErrMsg
	case o.Err != "":
		s += " -> " + o.Err + " " + o.ErrMsg
	case o.Kind == Acquire:
		s += fmt.Sprintf(" -> %v %s %s", o.Acquired, i64(o.RetEpoch), ts(o.Expires))
	case o.Kind == Guard:
		s += fmt.Sprintf(" -> %s, held %s, commit sent %s, written %v", ts(o.Expires), o.Hold, o.CommitAt.Format("15:04:05.000000"), o.Written)
	case o.Kind == Purge:
		s += fmt.Sprintf(" -> %d purged", o.Purged)
	case o.Kind == Inspect:
		s += fmt.Sprintf(" -> held=%v owner=%s epoch=%s expires=%s", o.Held, str(o.RetOwner), i64(o.RetEpoch), ts(o.Expires))
	default:
		s += fmt.Sprintf(" -> %s %s", o.Status, ts(o.Expires))
	}
	return s
}

func i64(p *int64) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprint(*p)
}

func str(p *string) string {
	if p == nil {
		return "NULL"
	}
	return *p
}

func ts(p *time.Time) string {
	if p == nil {
		return "NULL"
	}
	return p.Format("15:04:05.000000")
}

// Row is a row of lease.leases at the end.
type Row struct {
	Owner   *string
	Epoch   int64
	Expires *time.Time
}
