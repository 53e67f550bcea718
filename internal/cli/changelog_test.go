package cli

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// changelogMarkdown is CHANGELOG.md: the project's releases from the
// model, newest first, each item a bullet wrapped at 80 columns.
func changelogMarkdown() string {
	var b strings.Builder
	b.WriteString("# Changelog\n\nThe releases of pg_lease, newest first. Rendered from the model\n" +
		"(`internal/model/package.go`), from which the RPM and Debian changelogs are\n" +
		"rendered too; a test fails when this file differs\n" +
		"(`go test ./internal/cli -run TestChangelogIsTheModels -update`).\n" +
		"Upgrading from one version to the next: [docs/upgrading.md](docs/upgrading.md).\n")
	for _, c := range model.Packages.Changelog {
		if c.Release != 1 {
			continue // a rebuild, not a release of the extension
		}
		fmt.Fprintf(&b, "\n## %s (%s)\n\n", c.Version, c.Time().Format("2006-01-02"))
		for _, l := range model.Bullets(c.Items, "- ", "  ", 80) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestChangelogIsTheModels: CHANGELOG.md is the model's changelog.
func TestChangelogIsTheModels(t *testing.T) {
	want := changelogMarkdown()
	if *testenv.Update {
		if err := os.WriteFile("../../CHANGELOG.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil || string(got) != want {
		t.Errorf("CHANGELOG.md differs from the model's changelog (go test ./internal/cli -run TestChangelogIsTheModels -update): %v", err)
	}
}
