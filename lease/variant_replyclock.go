//go:build pglease_broken_replyclock

package lease

// broken: the local deadline counts from when a grant's or a renewal's
// reply came back instead of from when it was sent, so that a slow reply
// moves the deadline past the server's expiry.
const broken = "replyclock"
