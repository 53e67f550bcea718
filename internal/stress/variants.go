package stress

import (
	"fmt"
	"strings"
)

// A Variant is pg_lease with one bug put in on purpose, to show that the
// checker notices it.
type Variant struct {
	Name string
	Bug  string
	// Rules are the checks expected to fail (at least one of them).
	Rules []string
	old   string
	new   string
}

// Variants of the install script, each breaking one guarantee.
var Variants = []Variant{
	{"no_takeover_epoch", "a lapsed lease is taken over under the same epoch", []string{"unique-epoch"},
		"ELSE v_epoch + 1 END", "ELSE v_epoch END"},
	{"release_keeps_epoch", "release does not advance the epoch", []string{"unique-epoch"},
		"SET owner = NULL, expires_at = NULL, epoch = v_epoch + 1", "SET owner = NULL, expires_at = NULL, epoch = v_epoch"},
	{"unlocked_takeover", "a free lease is taken without re-reading it under a row lock", []string{"unique-epoch", "no-overlap"},
		"WHERE l.name = acquire.name\n                   FOR NO KEY UPDATE;", "WHERE l.name = acquire.name;"},
	{"no_lapse_check", "renew and release accept a lapsed lease", []string{"no-revival", "release-live"},
		"WHEN v_expires <= v_now THEN 'lapsed'", "WHEN false THEN 'lapsed'"},
	{"transaction_clock", "now() instead of clock_timestamp(): a waiter never sees the lease lapse", []string{"wait-bounded", "wait-sees-free"},
		"clock_timestamp()", "now()"},
}

// Apply returns the install script with the bug in it.
func (v Variant) Apply(script string) (string, error) {
	if !strings.Contains(script, v.old) {
		return "", fmt.Errorf("variant %s: the script has no %q", v.Name, v.old)
	}
	return strings.ReplaceAll(script, v.old, v.new), nil
}
