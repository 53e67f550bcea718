// Package stress runs many clients against pg_lease at once, records every
// call with its client-side start and end times, and checks the history
// and the final table against the lease's guarantees (the checker is in
// check.go). The server runs on this machine, so the server's
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
)

// Op is one call and its outcome.
type Op struct {
	ID      int
	Client  int
	Kind    Kind
	Name    string
	Owner   string
	Epoch   int64         // renew, release: the token passed
	TTL     time.Duration // acquire, renew
	MaxWait time.Duration // acquire: 0 is non-blocking
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
	Expires  *time.Time // acquire, renew, inspect
}

func (o Op) String() string {
	s := fmt.Sprintf("#%d c%d %s(%s", o.ID, o.Client, o.Kind, o.Name)
	switch o.Kind {
	case Acquire:
		s += fmt.Sprintf(", %s, %s, wait %s)", o.Owner, o.TTL, o.MaxWait)
	case Renew:
		s += fmt.Sprintf(", %s, %d, %s)", o.Owner, o.Epoch, o.TTL)
	case Release:
		s += fmt.Sprintf(", %s, %d)", o.Owner, o.Epoch)
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
