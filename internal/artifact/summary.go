package artifact

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/sourcetree"
)

// Summary writes what a build wrote into out, one artifact a line (kind,
// size, SHA-256, path), then what to do next with it: where to publish it
// (repoURL, when known), PGXN, the images, and a warning when unsigned.
func Summary(w io.Writer, out, repoURL string, arts []sourcetree.Artifact, signed bool) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-14s %8s  %-64s  %s\n", "KIND", "BYTES", "SHA256", "FILE")
	images := false
	for _, a := range arts {
		fmt.Fprintf(w, "%-14s %8d  %s  %s\n", a.Kind, a.Size, a.SHA256, filepath.Join(out, a.Path))
		images = images || strings.HasPrefix(a.Path, ImagesDir+"/")
	}
	fmt.Fprintln(w)
	for _, line := range nextSteps(out, repoURL, signed, images) {
		fmt.Fprintln(w, line)
	}
}

// nextSteps says what to do with what a build wrote into out (images:
// whether it made CloudNativePG images).
func nextSteps(out, repoURL string, signed, images bool) []string {
	e := model.PgLease
	where := "the URL you will pass as --repo-url"
	if repoURL != "" {
		where = repoURL
	}
	lines := []string{
		"Next:",
		fmt.Sprintf("  publish %s/ as it is at %s (dnf and apt read the el*/ and apt/ trees; hosts take %s or %s)",
			out, where, e.RepoFile(), e.SourcesFileFor("CODENAME")),
		fmt.Sprintf("  upload %s to PGXN; attach %s and SHA256SUMS to the release", filepath.Join(out, e.PGXNZip()), filepath.Join(out, e.Tarball())),
	}
	if images {
		lines = append(lines, fmt.Sprintf("  push the CloudNativePG images in %s/ with skopeo copy --all oci:DIR docker://REGISTRY/IMAGE:TAG", filepath.Join(out, ImagesDir)))
	}
	if !signed {
		lines = append(lines, "  unsigned: hosts with gpgcheck=1 refuse these packages; build again with --sign-key FILE to publish")
	}
	return lines
}
