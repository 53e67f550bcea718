package runner

import "testing"

func TestWithinRefusesEscapes(t *testing.T) {
	for _, tc := range []struct {
		rel string
		ok  bool
	}{
		{"regress/results/a.out", true},
		{"a/../b", true},
		{"", true},
		{"../pg17/x", false},
		{"../pg1x", false},
		{"a/../../b", false},
		{"/etc/passwd", false},
	} {
		_, err := Within("/tmp/results/pg1", tc.rel)
		if (err == nil) != tc.ok {
			t.Errorf("Within(/tmp/results/pg1, %q): err = %v, want ok=%v", tc.rel, err, tc.ok)
		}
	}
}
