package pgtest

import (
	"testing"
)

func TestApply(t *testing.T) {
	const s = "a;\nCREATE x AS 1;\nb;\nCREATE y AS 2;\nc;\nEND"
	for _, c := range []struct {
		name  string
		edits []Edit
		want  string // "" for ErrScriptChanged
	}{
		{"once", []Edit{{Old: "b;", New: "B;"}}, "a;\nCREATE x AS 1;\nB;\nCREATE y AS 2;\nc;\nEND"},
		{"twice where it says twice", []Edit{{Old: "CREATE", New: "MAKE", Times: 2}}, "a;\nMAKE x AS 1;\nb;\nMAKE y AS 2;\nc;\nEND"},
		{"twice where it says once", []Edit{{Old: "CREATE", New: "MAKE"}}, ""},
		{"once where it says twice", []Edit{{Old: "b;", New: "B;", Times: 2}}, ""},
		{"missing", []Edit{{Old: "z;", New: ""}}, ""},
		{"at the end", []Edit{{New: "x;\n"}}, "a;\nCREATE x AS 1;\nb;\nCREATE y AS 2;\nc;\nENDx;\n"},
		{"after", []Edit{{Old: "CREATE", New: "MAKE", After: "b;"}}, "a;\nCREATE x AS 1;\nb;\nMAKE y AS 2;\nc;\nEND"},
		{"after twice", []Edit{{Old: "AS", New: "IS", After: "CREATE"}}, ""},
		{"nothing after", []Edit{{Old: "a;", New: "", After: "c;"}}, ""},
		{"through", []Edit{{Old: "CREATE y", Through: ";\n"}}, "a;\nCREATE x AS 1;\nb;\nc;\nEND"},
		{"through each", []Edit{{Old: "CREATE", Through: ";\n", Times: 2}}, "a;\nb;\nc;\nEND"},
		{"through missing", []Edit{{Old: "c;", Through: "X"}}, ""},
		{"cut", []Edit{{Old: "CREATE", Cut: true, Times: 2}}, "a;\n"},
		{"nothing", []Edit{{}}, ""},
		{"after and times", []Edit{{Old: "CREATE", After: "a;", Times: 2}}, ""},
		{"cut and through", []Edit{{Old: "CREATE", Cut: true, Through: ";"}}, ""},
		{"in order", []Edit{{Old: "a;", New: "z;"}, {Old: "z;", New: "y;"}}, "y;\nCREATE x AS 1;\nb;\nCREATE y AS 2;\nc;\nEND"},
	} {
		got, err := Apply(s, c.edits...)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%s: got %q, %v; want the script changed", c.name, got, err)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
