package stress

import (
	"testing"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgtest"
)

// A Variant is pg_lease with one bug put in on purpose, to show that the
// checker notices it.
type Variant struct {
	Name string
	Bug  string
	// Rules are the checks expected to fail (at least one of them).
	Rules []string
	// Edits put the bug into the install script.
	Edits []pgtest.Edit
	// Fencing: the bug is in guard or purge, so the run calls them.
	Fencing bool
}

// Variants of the install script, each breaking one of the rules the
// history checker (check.go) holds a run to. A bug the checker should
// see: add a variant here, with the rules that must catch it.
var Variants = []Variant{
	{"no_takeover_epoch", "a lapsed lease is taken over under the same epoch", []string{"unique-epoch"},
		[]pgtest.Edit{{Old: "ELSE l.epoch + 1 END", New: "ELSE l.epoch END", Times: 8}}, false},
	{"release_keeps_epoch", "release does not advance the epoch", []string{"unique-epoch"},
		[]pgtest.Edit{{Old: "SET owner = NULL, expires_at = NULL, epoch = l.epoch + 1", New: "SET owner = NULL, expires_at = NULL, epoch = l.epoch", Times: 3}}, false},
	{"unchecked_takeover", "a free lease is taken without re-checking it as it is written", []string{"unique-epoch", "no-overlap"},
		[]pgtest.Edit{
			{Old: "AND (l.owner IS NULL OR (CASE WHEN l.session_id IS NULL THEN l.expires_at\n" +
				"                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id FOR SHARE), l.expires_at) END) <= clock_timestamp()\n",
				New: "AND (true\n", Times: 4},
			{Old: "AND (l.owner IS NULL OR (l.session_id IS NULL AND l.expires_at <= clock_timestamp())\n", New: "AND (true\n", Times: 4}}, false},
	{"no_lapse_check", "renew and release accept a lapsed lease", []string{"no-revival", "release-live"},
		[]pgtest.Edit{{Old: "WHEN v_expires <= v_now THEN 'lapsed'", New: "WHEN false THEN 'lapsed'", Times: 3},
			{Old: "\n               AND l.expires_at > clock_timestamp()", New: "", Times: 1}}, false},
	{"transaction_clock", "now() instead of clock_timestamp(): a waiter never sees the lease lapse", []string{"wait-bounded", "wait-sees-free"},
		[]pgtest.Edit{{Old: "clock_timestamp()", New: "now()", Times: 79}}, false},
	{"guard_takes_no_lock", "guard checks the lease but does not lock its row", []string{"guard-fences"},
		[]pgtest.Edit{{Old: "\n               FOR SHARE OF l;", New: ";", Times: 1}}, true},
	{"purge_forgets_mark", "purge deletes names without raising the high-water mark", []string{"epochs-grow", "unique-epoch"},
		[]pgtest.Edit{{Old: "INSERT INTO @extschema@.purge_mark AS m (id, epoch) VALUES (true, v_max)\n" +
			"        ON CONFLICT ON CONSTRAINT purge_mark_pkey DO UPDATE SET epoch = greatest(m.epoch, excluded.epoch);", New: "NULL;", Times: 1}}, true},
}

// TestVariantsStillApply: each variant's edits still find their text in
// today's install script: the fast tier's check. The runs that show the
// checker catching each variant are TestCheckerCatchesBrokenVariants.
func TestVariantsStillApply(t *testing.T) {
	for _, v := range Variants {
		if err := pgtest.Check(model.PgLease.ScriptFile(), v.Edits...); err != nil {
			t.Errorf("variant %s: %v", v.Name, err)
		}
	}
}
