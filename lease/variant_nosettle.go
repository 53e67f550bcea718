//go:build pglease_broken_nosettle

package lease

// broken: an acquire whose commit drew the cancelled-wait warning is
// handed out as granted, without lease.inspect settling it.
const broken = "nosettle"
