//go:build pglease_broken_forget

package lease

// broken: the client's renewal timer, when it fires, starts the renewals
// due but is not set for the leases due later, which wait until a
// renewed lease sets it again: up to RenewEvery late.
const broken = "forget"
