//go:build !pglease_broken_giveup && !pglease_broken_nosettle && !pglease_broken_replyclock && !pglease_broken_firstcall && !pglease_broken_forget && !pglease_broken_earlyinspect && !pglease_broken_nodeadline && !pglease_broken_oneconn

package lease

// broken names a bug put in on purpose, by a build tag, so that the
// project's tests can show they catch it (internal/clienttest's
// TestBrokenClientsAreCaught); "" in every real build.
const broken = ""
