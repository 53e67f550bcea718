//go:build pglease_broken_oneconn

package lease

// broken: renewals share the calls' connection, so a long call holds them
// up (what a keep-alive on the application's busy pool suffers).
const broken = "oneconn"
