package suite

import (
	"testing"
	"testing/fstest"
	"time"
)

func TestParseOutputOldFormat(t *testing.T) {
	// pg_regress 14 and 15
	out := []byte(`============== running regression test queries        ==============
test api                          ... ok           36 ms
test blocking                     ... FAILED      455 ms
     parallel_member              ... ok            3 ms
`)
	got := ParseOutput(Regress, out)
	want := []Case{
		{Regress, "api", true, 36 * time.Millisecond},
		{Regress, "blocking", false, 455 * time.Millisecond},
		{Regress, "parallel_member", true, 3 * time.Millisecond},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("case %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseOutputTAP(t *testing.T) {
	// pg_regress 16 and later
	out := []byte(`# using postmaster on /tmp, port 5432
ok 1         - api                                        41 ms
not ok 2     - blocking                                  460 ms
# 1 of 2 tests failed.
1..2
`)
	got := ParseOutput(Isolation, out)
	if len(got) != 2 || got[0] != (Case{Isolation, "api", true, 41 * time.Millisecond}) ||
		got[1] != (Case{Isolation, "blocking", false, 460 * time.Millisecond}) {
		t.Errorf("got %+v", got)
	}
}

func TestMissingTestsCountAsFailed(t *testing.T) {
	cases := markMissing(Regress, []string{"a", "b"}, []Case{{Regress, "a", true, 0}})
	if len(cases) != 2 || cases[1].Name != "b" || cases[1].Passed {
		t.Errorf("got %+v", cases)
	}
	r := Result{Cases: cases}
	if r.Passed() {
		t.Error("a result with a missing test passed")
	}
	if (Result{}).Passed() {
		t.Error("an empty result passed")
	}
}

func TestTests(t *testing.T) {
	src := fstest.MapFS{
		"regress/sql/b.sql":        {},
		"regress/sql/a.sql":        {},
		"regress/sql/notes.txt":    {},
		"isolation/specs/x.spec":   {},
		"isolation/expected/x.out": {},
	}
	got, err := Tests(src, Regress)
	if err != nil || len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("Tests(regress) = %v, %v", got, err)
	}
	got, err = Tests(src, Isolation)
	if err != nil || len(got) != 1 || got[0] != "x" {
		t.Errorf("Tests(isolation) = %v, %v", got, err)
	}
}
