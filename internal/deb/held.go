package deb

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/clearsign"

	"github.com/pglease/pglease-gen/internal/render"
)

// held is what one suite of a published tree holds (build --into), read
// from its indices as apt reads them: the debs its Packages list, the
// source packages its Sources lists, the indices its Release names under
// by-hash/ (kept one generation, for a host that read the old Release
// while the tree was replaced), and the Release's Date.
type held struct {
	debs   map[string][]byte // by file name
	srcs   []Source
	byHash render.Files
	date   time.Time
}

// heldSuite reads the suite codename of tree; a tree without that suite
// holds nothing. A file an index names that the tree does not hold (a
// version dropped with --drop) is left out.
func heldSuite(tree render.Files, codename string) (held, error) {
	h := held{debs: map[string][]byte{}, byHash: render.Files{}}
	dist := path.Join(RepoDir, "dists", codename)
	release, ok := tree[path.Join(dist, "Release")]
	if !ok {
		return h, nil
	}
	bad := func(file, why string) (held, error) {
		return h, fmt.Errorf("the published tree's %s: %s", file, why)
	}
	rel := paragraphs(release)
	if len(rel) != 1 {
		return bad(path.Join(dist, "Release"), "not one paragraph")
	}
	var err error
	if h.date, err = time.Parse(time.RFC1123, field(rel[0], "Date")); err != nil {
		return bad(path.Join(dist, "Release"), "Date: "+err.Error())
	}
	for _, l := range strings.Split(field(rel[0], "SHA256"), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		name := path.Join(dist, path.Dir(f[2]), "by-hash", "SHA256", f[0])
		if b, ok := tree[name]; ok {
			h.byHash[name] = b
		}
		if !strings.HasSuffix(f[2], "/Packages") {
			continue
		}
		for _, stanza := range paragraphs(tree[path.Join(dist, f[2])]) {
			file := field(stanza, "Filename")
			if file == "" {
				return bad(path.Join(dist, f[2]), "a stanza without Filename")
			}
			if b, ok := tree[path.Join(RepoDir, file)]; ok {
				h.debs[path.Base(file)] = b
			}
		}
	}
	sources := path.Join(dist, Component, "source", "Sources")
	for _, stanza := range paragraphs(tree[sources]) {
		if len(stanza) == 0 {
			continue
		}
		s := Source{Name: field(stanza, "Package"), Version: field(stanza, "Version"), Files: map[string][]byte{}}
		dir := field(stanza, "Directory")
		if s.Name == "" || s.Version == "" || dir == "" {
			return bad(sources, "a stanza without Package, Version or Directory")
		}
		var ok bool
		if s.Dsc, ok = tree[path.Join(RepoDir, dir, s.DscName())]; !ok {
			continue // dropped
		}
		s.Control = s.Dsc
		if b, _ := clearsign.Decode(s.Dsc); b != nil {
			s.Control = b.Plaintext
		}
		for _, l := range strings.Split(field(stanza, "Checksums-Sha256"), "\n") {
			f := strings.Fields(l)
			if len(f) != 3 {
				continue
			}
			b, ok := tree[path.Join(RepoDir, dir, f[2])]
			if !ok {
				return bad(sources, fmt.Sprintf("%s names %s, which the tree does not hold", s.DscName(), f[2]))
			}
			s.Files[f[2]] = b
		}
		h.srcs = append(h.srcs, s)
	}
	return h, nil
}
