package images

import (
	"fmt"
	"path"

	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/rpm"
)

// EL9Repository holds the stand-ins for an EL9 host with the PGDG
// repository configured: Debian's dnf and rpm, and a local repository
// offering postgresqlN-server, built from the same pinned server build in
// PGDG's layout (/usr/pgsql-N). Nothing of PostgreSQL is installed until
// dnf installs it.
const EL9Repository = "pglease/el9"

// StandinRepo is where the stand-in repository sits in the EL9 image.
const StandinRepo = "/srv/pgdg-standin"

// family is a kind of local image: where the server goes and what else
// the image holds.
type family struct {
	name   string
	repo   string
	layout func(int) layout.Layout
	nodes  func(b env, r recipe) ([]node, error)
	run    func(r recipe) string // a RUN step after the nodes are copied in, or ""
}

var families = []family{
	{"debian", Repository, layout.Debian, officialNodes, officialRun},
	{"el9", EL9Repository, layout.PGDG, el9Nodes, nil},
	{"debian-apt", DebianRepository, layout.Debian, debianNodes, nil},
}

// ServerPackage describes the stand-in postgresqlN-server RPM.
func ServerPackage(srv Server, l layout.Layout, nodes []node) rpm.Package {
	p := rpm.Package{
		Name: model.ServerPackage(srv.Major), Version: srv.Release(), Release: "1standin" + model.Packages.Dist, Arch: model.ELArch(srv.Arch),
		Summary:     fmt.Sprintf("PostgreSQL %s server (stand-in for PGDG's package, from %s@%s)", srv.Release(), srv.Package(), srv.Version),
		Description: fmt.Sprintf("The pinned PostgreSQL server build %s@%s laid out as\nPGDG's %s, for the pg_lease install proof.", srv.Package(), srv.Version, l.Prefix),
		License:     "PostgreSQL", URL: "https://www.postgresql.org/", BuildTime: model.Packages.Released(),
	}
	for _, n := range nodes {
		p.Files = append(p.Files, rpm.File{Path: n.Path, Mode: uint32(n.Mode), Link: n.Link, Body: n.Body})
	}
	return p
}

// el9Nodes are the stand-in repository (the server RPM and its metadata),
// its .repo file and dnf's release version.
func el9Nodes(e env, r recipe) ([]node, error) {
	tree, err := serverTree(e.tgz, r.Layout)
	if err != nil {
		return nil, err
	}
	p := ServerPackage(r.Server, r.Layout, tree)
	b, err := rpm.Pack(p)
	if err != nil {
		return nil, err
	}
	info, err := rpm.ReadInfo(p.FileName(), b)
	if err != nil {
		return nil, err
	}
	md, err := rpm.Repodata([]rpm.Info{info}, int(p.BuildTime.Unix()))
	if err != nil {
		return nil, err
	}
	nodes := []node{{Path: path.Join(StandinRepo, p.FileName()), Mode: 0o644, Body: b}}
	for _, name := range render.Files(md).Names() {
		nodes = append(nodes, node{Path: path.Join(StandinRepo, name), Mode: 0o644, Body: md[name]})
	}
	repo := fmt.Sprintf("[pgdg-standin]\nname=PGDG stand-in: %s from the pinned npm build\nbaseurl=file://%s\nenabled=1\ngpgcheck=0\n",
		p.Name, StandinRepo)
	nodes = append(nodes,
		node{Path: "/etc/yum.repos.d/pgdg-standin.repo", Mode: 0o644, Body: []byte(repo)},
		node{Path: "/etc/dnf/vars/releasever", Mode: 0o644, Body: []byte("9\n")},
	)
	return nodes, nil
}
