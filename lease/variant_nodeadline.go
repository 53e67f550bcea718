//go:build pglease_broken_nodeadline

package lease

// broken: no timer ends a lease at its local deadline; only a renewal
// the server refuses does (what a keep-alive without a deadline does).
const broken = "nodeadline"
