//go:build pglease_broken_firstcall

package lease

// broken: a call's timeout is counted from the start of the first call
// since the slot's timer was armed, not from its own start, so that a
// call that follows others closely is cancelled early.
const broken = "firstcall"
