package artifact

import (
	"strings"
	"testing"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
)

// TestSourceDateEpochChecked: SOURCE_DATE_EPOCH is a number of seconds not
// after now (a future one dated the Release and its signatures ahead of
// every host's clock, and apt refuses such a suite); unset, the newest
// changelog entry's time.
func TestSourceDateEpochChecked(t *testing.T) {
	now := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	pkg := model.Packages
	for _, c := range []struct {
		in, want, err string
	}{
		{"", pkg.Released().UTC().Format(time.RFC3339), ""},
		{"1764878400", "2025-12-04T20:00:00Z", ""},
		{"1796414400", "2026-12-04T20:00:00Z", ""},
		{"1796414401", "", "SOURCE_DATE_EPOCH=1796414401 (2026-12-04 20:00:01 UTC) is after now (2026-12-04 20:00:00 UTC)"},
		{"1800000000", "", "apt refuses a Release dated ahead of the host's clock"},
		{"-1", "", "is not a number of seconds since 1970"},
		{"1.5", "", "is not a number of seconds since 1970"},
	} {
		got, err := SourceDateEpoch(c.in, pkg, now)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.in, err)
		case c.err == "" && got.UTC().Format(time.RFC3339) != c.want:
			t.Errorf("%q: %s; want %s", c.in, got.UTC().Format(time.RFC3339), c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: err = %v; want %q", c.in, err, c.err)
		}
	}
}
