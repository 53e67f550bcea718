// Package safety holds the tests that attack pg_lease on a real server:
// injected faults (terminated and killed backends, crashes, cancelled
// waits, dump and restore, lost connections), fuzzing of every argument,
// and privilege attacks by the installer and by other roles. It has no
// code of its own; see the _test.go files.
package safety
