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
	// Edits are replacements (old, new, old, new, ...) in the install script.
	Edits []string
	// Fencing: the bug is in guard or purge, so the run calls them.
	Fencing bool
}

// Variants of the install script, each breaking one guarantee.
var Variants = []Variant{
	{"no_takeover_epoch", "a lapsed lease is taken over under the same epoch", []string{"unique-epoch"},
		[]string{"ELSE l.epoch + 1 END", "ELSE l.epoch END"}, false},
	{"release_keeps_epoch", "release does not advance the epoch", []string{"unique-epoch"},
		[]string{"SET owner = NULL, expires_at = NULL, epoch = l.epoch + 1", "SET owner = NULL, expires_at = NULL, epoch = l.epoch"}, false},
	{"unchecked_takeover", "a free lease is taken without re-checking it as it is written", []string{"unique-epoch", "no-overlap"},
		[]string{"AND (l.owner IS NULL OR (CASE WHEN l.session_id IS NULL THEN l.expires_at\n" +
			"                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id FOR SHARE), l.expires_at) END) <= clock_timestamp()\n",
			"AND (true\n",
			"AND (l.owner IS NULL OR (l.session_id IS NULL AND l.expires_at <= clock_timestamp())\n", "AND (true\n"}, false},
	{"no_lapse_check", "renew and release accept a lapsed lease", []string{"no-revival", "release-live"},
		[]string{"WHEN v_expires <= v_now THEN 'lapsed'", "WHEN false THEN 'lapsed'",
			"\n               AND l.expires_at > clock_timestamp()", ""}, false},
	{"transaction_clock", "now() instead of clock_timestamp(): a waiter never sees the lease lapse", []string{"wait-bounded", "wait-sees-free"},
		[]string{"clock_timestamp()", "now()"}, false},
	{"guard_takes_no_lock", "guard checks the lease but does not lock its row", []string{"guard-fences"},
		[]string{"\n               FOR SHARE OF l;", ";"}, true},
	{"purge_forgets_mark", "purge deletes names without raising the high-water mark", []string{"epochs-grow", "unique-epoch"},
		[]string{"INSERT INTO @extschema@.purge_mark AS m (id, epoch) VALUES (true, v_max)\n" +
			"        ON CONFLICT ON CONSTRAINT purge_mark_pkey DO UPDATE SET epoch = greatest(m.epoch, excluded.epoch);", "NULL;"}, true},
}

// Apply returns the install script with the bug in it.
func (v Variant) Apply(script string) (string, error) {
	for i := 0; i+1 < len(v.Edits); i += 2 {
		if !strings.Contains(script, v.Edits[i]) {
			return "", fmt.Errorf("variant %s: the script has no %q", v.Name, v.Edits[i])
		}
		script = strings.ReplaceAll(script, v.Edits[i], v.Edits[i+1])
	}
	return script, nil
}
