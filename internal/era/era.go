// Package era is the rule by which pg_lease keeps a fencing epoch from
// being given twice across crashes, promotions, restores and operators'
// lease.new_era() calls, written small enough to check: the property test
// runs it over many random histories of grants, era changes, forks and
// lost tails, and runs weakened rules over the same histories to show that
// the test finds the repeats they allow. dev/eras.md gives the argument
// and every assumption; the extension's SQL implements the same rule.
//
// Two versions of the rule are here. This file is 0.3.0's, which the
// 0.2.0 and 0.3.0 updates start from; era04.go is the rule of 0.4.0 and
// later (0.5.x keep its bands and add the grace): bands numbered by generation,
// timeline counted from the generation's first and count (Band04), an era
// settled at the first grant after a restart (enter_era).
//
// An era is identified by three numbers, compared in this order:
//
//   - Gen, the cluster generation: one more than the recorded era's
//     whenever the server's system identifier is not the recorded one
//     (the data was restored into another cluster);
//   - TLI, the timeline the server writes on: a promotion, or a recovery
//     that ends on a new timeline, moves to a higher one;
//   - N, the restarts of the server and the operator's lease.new_era()
//     calls on that timeline (a restart begins an era because a crash may
//     lose a grant whose epoch its client already saw).
//
// Each era owns one band of epochs, Width wide, at a place that grows with
// (Gen, TLI, N), so that an era that follows another in any line of history
// has a higher band than every era before it, even those it never saw (a
// lagging standby never sees its primary's last new_era(), but its own
// promotion raises TLI, which ranks above N). The era a database is
// installed in (or updated to 0.3.0 in) owns band 0, so that a name never
// acquired still starts at epoch 1.
package era

import (
	"cmp"
	"fmt"
)

// Width is how many epochs one era's band holds.
const Width int64 = 1 << 32

// The bits of a band number (31 in all, so that (band+1)*Width fits a
// bigint): Gen above TLI above N.
const (
	NBits   = 15
	TLIBits = 10
	GenBits = 6
)

// Era is one era of a database.
type Era struct {
	Gen, TLI, N int64
	// Installed marks the era the extension was installed or updated
	// in: its band is 0, whatever its numbers.
	Installed bool
}

// Compare orders eras by (Gen, TLI, N).
func Compare(a, b Era) int {
	return cmp.Or(cmp.Compare(a.Gen, b.Gen), cmp.Compare(a.TLI, b.TLI), cmp.Compare(a.N, b.N))
}

// Band is the era's band number: epochs Band*Width+1 .. (Band+1)*Width.
// An era whose numbers do not fit is an error, never a band of another.
func (e Era) Band() (int64, error) {
	if e.Installed {
		return 0, nil
	}
	switch {
	case e.Gen < 0 || e.Gen >= 1<<GenBits:
		return 0, fmt.Errorf("era generation %d is outside 0..%d", e.Gen, 1<<GenBits-1)
	case e.TLI < 1 || e.TLI >= 1<<TLIBits:
		return 0, fmt.Errorf("timeline %d is outside 1..%d", e.TLI, 1<<TLIBits-1)
	case e.N < 0 || e.N >= 1<<NBits:
		return 0, fmt.Errorf("lease.new_era() was called %d times on timeline %d; at most %d fit", e.N, e.TLI, 1<<NBits-1)
	}
	return e.Gen<<(TLIBits+NBits) | e.TLI<<NBits | e.N, nil
}

// Server is what a call can see of the server it runs on: its system
// identifier, its timeline and the start of its current run.
type Server struct {
	SystemID int64
	TLI      int64
	Boot     int64
}

// Record is the era a database has recorded, with the server it was
// recorded on.
type Record struct {
	Era    Era
	Server Server
}

// Enter is the era a changing call works in: the recorded one while the
// server is the one it was recorded on, in the same run; otherwise a new
// era, of the next generation when the system identifier differs, on the
// server's timeline when that differs, and the next on the timeline after
// a restart.
func Enter(r Record, s Server) Record {
	switch {
	case s == r.Server:
		return r
	case s.SystemID != r.Server.SystemID:
		return Record{Era{Gen: r.Era.Gen + 1, TLI: s.TLI}, s}
	case s.TLI != r.Server.TLI:
		return Record{Era{Gen: r.Era.Gen, TLI: s.TLI}, s}
	default:
		return Record{Era{Gen: r.Era.Gen, TLI: s.TLI, N: r.Era.N + 1}, s}
	}
}

// NewEraStep is how far lease.new_era() moves N: to the next multiple of
// it, so that a copy that calls it (a base backup restored without
// archive recovery) ranks above the eras its source began by restarting
// after the copy was made, up to NewEraStep-1 of them.
const NewEraStep = 64

// NewEra is lease.new_era(): the next era on the same timeline, at the
// next multiple of NewEraStep.
func NewEra(r Record) Record {
	e := r.Era
	e.N = (e.N/NewEraStep + 1) * NewEraStep
	e.Installed = false
	return Record{e, r.Server}
}

// Grant is the epoch of a new holding period of a name whose last epoch
// was last, granted in band lastBand, in an era of band now: the next
// epoch in the same band, the first of the era's band when the name was
// last granted in an earlier band (or never: last 0, lastBand 0). A name
// that would leave its band is an error.
func Grant(last, lastBand, now int64) (int64, error) {
	next := last + 1
	if lastBand < now {
		next = max(next, now*Width+1)
	}
	if next > (now+1)*Width {
		return 0, fmt.Errorf("epoch %d would leave band %d: the name has used up its era's %d epochs", next, now, Width)
	}
	return next, nil
}

// 0.4.0 numbers a band by its generation (10 bits), its timeline counted
// from the generation's first (8 bits) and its count of crash restarts
// and new_era() calls on that timeline (13 bits): still 31 bits. The SQL
// writes it as a sum of bigints (in SQL, << and | share one precedence:
// 0.3.0's bug); TestBandCornersInSQL checks the two agree at every corner.
const (
	GenMax    = 1<<10 - 1
	RelTLIMax = 1<<8 - 1
	NMax      = 1<<13 - 1
)

// Band04 is 0.4.0's band of generation gen, relative timeline rel and
// count n; numbers outside their ranges are an error, never another band.
func Band04(gen, rel, n int64) (int64, error) {
	if gen < 0 || gen > GenMax || rel < 0 || rel > RelTLIMax || n < 0 || n > NMax {
		return 0, fmt.Errorf("era (generation %d, timeline +%d, %d) is outside 0..%d, 0..%d, 0..%d", gen, rel, n, GenMax, RelTLIMax, NMax)
	}
	return gen*(RelTLIMax+1)*(NMax+1) + rel*(NMax+1) + n, nil
}

// Last04 is the last epoch of band b: (b+1)*Width, or bigint's largest
// for the highest band.
func Last04(b int64) int64 {
	if b >= (1<<63-1)/Width {
		return 1<<63 - 1
	}
	return (b + 1) * Width
}
