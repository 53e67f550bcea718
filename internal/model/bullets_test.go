package model

import (
	"strings"
	"testing"
)

// TestBulletsWrapItems: an item of any length stays one bullet, wrapped
// onto continuation lines of at most the width (a 199-character release
// note gave lintian's debian-changelog-line-too-long, and a sentence
// wrapped by hand became two bullets in both formats); a word longer than
// the width stands alone.
func TestBulletsWrapItems(t *testing.T) {
	note := strings.Repeat("Rebuilt against the new toolchain ", 6)[:199]
	long := strings.Repeat("x", 90)
	got := Bullets([]string{note, "short", long + " end"}, "  * ", "    ", 80)
	bullets := 0
	for _, l := range got {
		if strings.HasPrefix(l, "  * ") {
			bullets++
		} else if !strings.HasPrefix(l, "    ") {
			t.Errorf("line %q is neither a bullet nor a continuation", l)
		}
		if len(l) > 80 && !strings.Contains(l, long) {
			t.Errorf("line of %d characters: %q", len(l), l)
		}
	}
	if bullets != 3 {
		t.Errorf("%d bullets for 3 items:\n%s", bullets, strings.Join(got, "\n"))
	}
	if j := strings.Join(got, " "); strings.Join(strings.Fields(j), " ") != strings.Join(strings.Fields("* "+note+" * short * "+long+" end"), " ") {
		t.Errorf("the words changed:\n%s", strings.Join(got, "\n"))
	}
	// every entry of the packaging's own changelog fits both formats
	for _, c := range Packages.Changelog {
		for _, l := range append(Bullets(c.Items, "  * ", "    ", 80), Bullets(c.Items, "- ", "  ", 80)...) {
			if len(l) > 80 {
				t.Errorf("%s: line of %d characters: %q", c.Version, len(l), l)
			}
		}
	}
}
