package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// The documents a reader meets: the README and everything in docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs found (%v)", err)
	}
	return append([]string{"../../README.md"}, files...)
}

// allDocFiles are docFiles and the maintainers' pages in dev/: their links
// and the commands they show are checked too.
func allDocFiles(t *testing.T) []string {
	t.Helper()
	dev, err := filepath.Glob("../../dev/*.md")
	if err != nil || len(dev) == 0 {
		t.Fatalf("no dev/ pages found (%v)", err)
	}
	return append(docFiles(t), dev...)
}

// mdParts splits a markdown text into its prose (fenced blocks blanked,
// lines kept so that numbers stay right) and its code: the fenced blocks'
// lines and the inline code spans of the prose.
func mdParts(text string) (prose []string, code []string) {
	fence := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			prose = append(prose, "")
			continue
		}
		if fence {
			code = append(code, l)
			prose = append(prose, "")
			continue
		}
		prose = append(prose, l)
	}
	// a code span may run over a line break
	for _, m := range codeSpan.FindAllStringSubmatch(strings.Join(prose, " "), -1) {
		code = append(code, m[1])
	}
	return prose, code
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	mdLink   = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	heading  = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*$`)
)

// anchors are the heading ids GitHub gives a markdown file: lower case,
// letters, digits, '-' and '_' kept, spaces to '-', the rest dropped, and
// -1, -2 ... after a repeated one.
func anchors(text string) map[string]bool {
	prose, _ := mdParts(text)
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			seen[id] = n + 1
			id += "-" + strconv.Itoa(n)
		} else {
			seen[id] = 1
		}
		out[id] = true
	}
	return out
}

// linkProblem says what is wrong with a relative link from file, or "".
func linkProblem(file, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, frag, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), path)
	}
	st, err := os.Stat(dest)
	if err != nil {
		return "no file " + path
	}
	if frag == "" {
		return ""
	}
	if st.IsDir() || !strings.HasSuffix(dest, ".md") {
		return "an anchor into " + path + ", which is not a markdown file"
	}
	b, err := os.ReadFile(dest)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(b))[frag] {
		return "no heading #" + frag + " in " + filepath.Base(dest)
	}
	return ""
}

// TestDocLinks checks that every relative link in the README, docs/ and dev/
// points at a file, and at a heading of it that exists.
func TestDocLinks(t *testing.T) {
	links := 0
	for _, f := range allDocFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		prose, _ := mdParts(string(b))
		for n, l := range prose {
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				links++
				if p := linkProblem(f, m[1]); p != "" {
					t.Errorf("%s line %d: link %s: %s", filepath.Base(f), n+1, m[1], p)
				}
			}
		}
	}
	if links < 10 {
		t.Errorf("found only %d links in the docs; the pattern no longer matches them", links)
	}
}

func TestLinkProblemCatchesBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.md")
	if err := os.WriteFile(a, []byte("# A title\n\n## The `x` call (0.2.0)\n\n```\n# not a heading\n```\n## Twice\n## Twice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ target, want string }{
		{"a.md", ""},
		{"a.md#a-title", ""},
		{"#the-x-call-020", ""},
		{"#twice-1", ""},
		{"#not-a-heading", "no heading #not-a-heading"},
		{"b.md", "no file b.md"},
		{"a.md#missing", "no heading #missing"},
		{"https://example.org/x#y", ""},
	} {
		if got := linkProblem(a, c.target); (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.target, got, c.want)
		}
	}
}

// TestDocCommandsExist checks that every pglease-gen command and flag the
// README, docs/ and dev/ show in code exists in this CLI (the check the workflow
// test makes of the pipeline).
func TestDocCommandsExist(t *testing.T) {
	seen := 0
	for _, f := range allDocFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, code := mdParts(string(b))
		for _, l := range code {
			l, _, _ = strings.Cut(l, " #") // a shell comment
			for _, m := range invocation.FindAllStringSubmatch(l, -1) {
				seen++
				var args []string
				for _, a := range strings.Fields(m[2]) {
					args = append(args, strings.Trim(a, "[]`,."))
				}
				if err := checkInvocation(m[1], args); err != "" {
					t.Errorf("%s: %s\n  %s", filepath.Base(f), err, strings.TrimSpace(l))
				}
			}
		}
	}
	if seen < 20 {
		t.Errorf("found only %d pglease-gen invocations in the docs; the pattern no longer matches them", seen)
	}
}

// runLog finds what belongs in bench/results/, not in user docs: a date
// (a run's) and a commit hash (7 to 40 hex digits with a letter and a
// digit among them).
var (
	runDate    = regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`)
	commitHash = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
)

// TestDocsHoldNoRunLog: docs/ says how to use pg_lease and what holds; the
// runs behind it, with their dates and commits, live in bench/results/.
func TestDocsHoldNoRunLog(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs found (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if m := runDate.FindString(l); m != "" {
				t.Errorf("%s:%d: a date (%s): a run's date belongs in bench/results/", filepath.Base(f), i+1, m)
			}
			for _, m := range commitHash.FindAllString(l, -1) {
				if strings.ContainsAny(m, "abcdef") && strings.ContainsAny(m, "0123456789") && m != "ed25519" && m != "cv25519" {
					t.Errorf("%s:%d: a commit (%s): name what changed, and keep the run in bench/results/", filepath.Base(f), i+1, m)
				}
			}
		}
	}
}

// currentVersion finds the places where the docs name the version a build
// writes now (an artefact's file name, an image tag, a package's version,
// what CREATE EXTENSION installs), not a version's history: group 1 is the
// version.
var currentVersion = regexp.MustCompile(`(?:pg_lease-|pg-lease-|pg-lease_|pg_lease_(?:NN|\d+)-|pg_lease:|build/pg_lease--|installs )(\d+\.\d+\.\d+)` +
	`|(\d+\.\d+\.\d+)-1(?:PGSTY|ACME|\.pgdg)`)

// TestDocsNameTheCurrentVersion: where the README and docs/ name what a
// build writes now (pg_lease-X.tar.gz, pg_lease_17-X-1PGSTY.el9, an image
// tag, CREATE EXTENSION's version), X is the model's default version; with
// -update the test writes it there.
func TestDocsNameTheCurrentVersion(t *testing.T) {
	want := model.PgLease.Version()
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		changed := false
		for i, l := range lines {
			var out strings.Builder
			last := 0
			for _, m := range currentVersion.FindAllStringSubmatchIndex(l, -1) {
				s, e := m[2], m[3]
				if s < 0 {
					s, e = m[4], m[5]
				}
				if got := l[s:e]; got != want {
					if !*testenv.Update {
						t.Errorf("%s:%d: %q names %s where it means the current version, %s (go test ./internal/cli -run TestDocsNameTheCurrentVersion -update)", filepath.Base(f), i+1, l[m[0]:m[1]], got, want)
					}
					out.WriteString(l[last:s])
					out.WriteString(want)
					last = e
				}
			}
			if last > 0 {
				out.WriteString(l[last:])
				lines[i] = out.String()
				changed = true
			}
		}
		if changed && *testenv.Update {
			if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDocsListEveryScript: docs/upgrading.md names every install and
// update script the packages carry, and no other, and has a section
// (## FROM to TO) for each update step, and for no other.
func TestDocsListEveryScript(t *testing.T) {
	b, err := os.ReadFile("../../docs/upgrading.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	ext := model.PgLease
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(regexp.QuoteMeta(ext.Name)+`--[0-9.]+(?:--[0-9.]+)?\.sql`).FindAllString(text, -1) {
		named[m] = true
	}
	steps := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## ([0-9.]+) to ([0-9.]+)$`).FindAllStringSubmatch(text, -1) {
		steps[ext.UpdateScript(m[1], m[2])] = true
	}
	for _, s := range ext.Scripts() {
		if !named[s] {
			t.Errorf("docs/upgrading.md: %s is not named", s)
		}
		delete(named, s)
		if strings.Count(s, "--") == 2 {
			if !steps[s] {
				t.Errorf("docs/upgrading.md: the update %s has no section (## FROM to TO)", s)
			}
			delete(steps, s)
		}
	}
	for s := range named {
		t.Errorf("docs/upgrading.md: %s is named, but the packages carry no such script", s)
	}
	for s := range steps {
		t.Errorf("docs/upgrading.md: a section for %s, which the packages do not carry", s)
	}
}
