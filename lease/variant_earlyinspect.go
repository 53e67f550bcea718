//go:build pglease_broken_earlyinspect

package lease

// broken: an acquire lost with its connection is settled by lease.inspect
// at once, while the session that sent it may still commit the grant.
const broken = "earlyinspect"
