package pgtest

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/render"
)

// An Edit is one change that puts a bug into a script (or takes a part
// out of it). Old must occur exactly Times times (once when Times is 0)
// and each occurrence becomes New. Two fields narrow where it applies:
//   - After: only the first Old after After, which must itself occur
//     exactly once, is changed (Times is then 1);
//   - Through: each Old extends up to and including the first Through
//     after it (a statement from its CREATE to its ";\n");
//   - Cut: the first Old and everything after it are replaced (Times
//     still counts every Old in the script).
//
// An Edit with no Old adds New at the end of the script (a statement the
// broken update runs last).
//
// An edit that no longer finds what it says fails with ErrScriptChanged:
// a variant never quietly equals the script it was meant to break.
type Edit struct {
	Old, New string
	Times    int
	After    string
	Through  string
	Cut      bool
}

// ErrScriptChanged is the error of an edit whose text is no longer where
// the edit says: the script changed and the variant must follow it.
var ErrScriptChanged = fmt.Errorf("the script changed")

// Apply returns s with every edit made, in order.
func Apply(s string, edits ...Edit) (string, error) {
	for _, e := range edits {
		var err error
		if s, err = e.apply(s); err != nil {
			return "", err
		}
	}
	return s, nil
}

func (e Edit) apply(s string) (string, error) {
	if e.Old == "" {
		if e.Times != 0 || e.After != "" || e.Through != "" || e.Cut || e.New == "" {
			return "", fmt.Errorf("an edit that adds at the end has New and no Times, After, Through or Cut")
		}
		return s + e.New, nil
	}
	switch {
	case e.After != "" && e.Times > 1:
		return "", fmt.Errorf("an edit with After changes the first %q after it: Times %d says otherwise", e.Old, e.Times)
	case e.Cut && e.Through != "":
		return "", fmt.Errorf("an edit with Cut takes the rest of the script: Through %q says otherwise", e.Through)
	}
	want := e.Times
	if want == 0 {
		want = 1
	}
	head, body := "", s
	if e.After != "" {
		if n := strings.Count(s, e.After); n != 1 {
			return "", fmt.Errorf("%w: %q occurs %d times, not once", ErrScriptChanged, e.After, n)
		}
		i := strings.Index(s, e.After) + len(e.After)
		head, body, want = s[:i], s[i:], 1
	} else if n := strings.Count(s, e.Old); n != want {
		return "", fmt.Errorf("%w: %q occurs %d times, the edit expects %d", ErrScriptChanged, e.Old, n, want)
	}
	var b strings.Builder
	b.WriteString(head)
	for k := 0; k < want; k++ {
		i := strings.Index(body, e.Old)
		if i < 0 {
			return "", fmt.Errorf("%w: no %q after %q", ErrScriptChanged, e.Old, e.After)
		}
		end := i + len(e.Old)
		switch {
		case e.Cut:
			end = len(body)
		case e.Through != "":
			j := strings.Index(body[end:], e.Through)
			if j < 0 {
				return "", fmt.Errorf("%w: no %q after %q", ErrScriptChanged, e.Through, e.Old)
			}
			end += j + len(e.Through)
		}
		b.WriteString(body[:i])
		b.WriteString(e.New)
		body = body[end:]
		if e.Cut {
			break
		}
	}
	b.WriteString(body)
	return b.String(), nil
}

// Check reports whether edits still find their text in pg_lease's
// rendered script named file (model.PgLease.ScriptFile() for the install
// script), as an install of the variant would: the fast tier's check of a
// catalogue. The scripts are rendered once per test binary.
func Check(file string, edits ...Edit) error {
	files, err := rendered()
	if err != nil {
		return err
	}
	b, ok := files[file]
	if !ok {
		return fmt.Errorf("pg_lease has no script %s", file)
	}
	_, err = Apply(string(b), edits...)
	return err
}

var rendered = sync.OnceValues(func() (render.Files, error) { return render.Extension(model.PgLease, pglease.Files) })

// Install installs into inst a copy of pg_lease under name whose script
// file is changed by edits; remove deletes the copy's files. It is for
// harnesses that report errors instead of failing a test; tests call
// Variant.
func Install(inst pgserver.Install, name, file string, edits ...Edit) (remove func(), err error) {
	return pgserver.InstallCopy(model.PgLease, pglease.Files, inst, name, file, func(s string) (string, error) {
		s, err := Apply(s, edits...)
		if err != nil {
			return "", fmt.Errorf("variant %s: %w", name, err)
		}
		return s, nil
	})
}

// Variant installs into inst a copy of pg_lease under name whose script
// file (model.PgLease.ScriptFile() for the install script) is changed by
// edits, and removes the copy's files when the test ends. An edit that no
// longer finds what it changes fails the test saying the script changed,
// never by a variant that quietly equals the script.
func Variant(t testing.TB, inst pgserver.Install, name, file string, edits ...Edit) {
	t.Helper()
	remove, err := Install(inst, name, file, edits...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
}
