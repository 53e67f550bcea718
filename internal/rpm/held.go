package rpm

import (
	"encoding/xml"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/pglease/pglease-gen/internal/render"
)

// held is what a repository tree of a published output holds (build
// --into): the packages at its top that this build does not write again,
// its metadata documents (kept one generation, for a host that read the
// old repomd.xml while the tree was replaced) and repomd.xml's revision.
type held struct {
	infos    []Info
	files    render.Files // by name below the tree
	revision int
}

// heldTree reads the tree dir of a published output; one that does not
// have it holds nothing.
func heldTree(tree render.Files, dir string, built []Info) (held, error) {
	h := held{files: render.Files{}}
	for name, b := range tree {
		rel, ok := strings.CutPrefix(name, dir+"/")
		if !ok || strings.Contains(rel, "/") || !strings.HasSuffix(rel, ".rpm") ||
			slices.ContainsFunc(built, func(in Info) bool { return in.File == rel }) {
			continue
		}
		in, err := ReadInfo(rel, b)
		if err != nil {
			return h, fmt.Errorf("the published tree's %s: %w", name, err)
		}
		h.infos = append(h.infos, in)
		h.files[rel] = b
	}
	slices.SortFunc(h.infos, func(a, b Info) int { return strings.Compare(a.File, b.File) })
	md, ok := tree[path.Join(dir, "repodata", "repomd.xml")]
	if !ok {
		return h, nil
	}
	var x xRepomd
	if err := xml.Unmarshal(md, &x); err != nil {
		return h, fmt.Errorf("the published tree's %s: %w", path.Join(dir, "repodata", "repomd.xml"), err)
	}
	h.revision = x.Revision
	for _, d := range x.Data {
		if b, ok := tree[path.Join(dir, d.Location.Href)]; ok {
			h.files[d.Location.Href] = b
		}
	}
	return h, nil
}
