//go:build pglease_broken_giveup

package lease

// broken: the keep-alive gives the lease up at its first failed renewal
// (what a lock library that treats one failed heartbeat as loss does).
const broken = "giveup"
