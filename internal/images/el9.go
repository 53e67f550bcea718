package images

import (
	"archive/tar"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/pglease/pglease-gen/internal/deb"

	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/rpm"
)

// EL9Repository holds the stand-ins for an EL9 host with the PGDG
// repository configured: Debian's dnf and rpm, and a local repository
// offering postgresqlN-server in PGDG's layout (/usr/pgsql-N), built from
// the pinned npm server build or, for a major that has none (19), from
// Debian's own packages of it on the Debian release they need. Nothing of
// PostgreSQL is installed until dnf installs it (a major built from
// Debian's packages has their shared libraries, libpq among them, in the
// image, as PGDG's postgresqlN-libs would be on an EL host).
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
	// onRequest families are built only when Options.DebBuild asks, and
	// only for the majors Debian ships
	onRequest bool
}

var families = []family{
	{"debian", Repository, layout.Debian, officialNodes, officialRun, false},
	{"el9", EL9Repository, layout.PGDG, el9Nodes, el9Run, false},
	{"debian-apt", DebianRepository, layout.Debian, debianNodes, nil, false},
	{"debian-build", DebianBuildRepository, layout.Debian, buildNodes, buildRun, true},
}

// ServerPackage describes the stand-in postgresqlN-server RPM.
func ServerPackage(srv Server, l layout.Layout, nodes []node) rpm.Package {
	p := rpm.Package{
		Name: model.ServerPackage(srv.Major), Version: srv.Release(), Release: "1standin" + model.Packages.Dist, Arch: model.ELArch(srv.Arch),
		Summary:     fmt.Sprintf("PostgreSQL %s server (stand-in for PGDG's package, from %s)", srv.Release(), srv.Origin()),
		Description: fmt.Sprintf("The PostgreSQL server build %s laid out as\nPGDG's %s, for the pg_lease install proof.", srv.Origin(), l.Prefix),
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
	var tree, libs []node
	var err error
	if r.Debian != "" {
		tree, libs, err = debianServerTree(e, r)
	} else {
		tree, err = serverTree(e.tgz, r.Layout, psqlMajor)
	}
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
	nodes := append(libs, node{Path: path.Join(StandinRepo, p.FileName()), Mode: 0o644, Body: b})
	for _, name := range render.Files(md).Names() {
		nodes = append(nodes, node{Path: path.Join(StandinRepo, name), Mode: 0o644, Body: md[name]})
	}
	repo := fmt.Sprintf("[pgdg-standin]\nname=PGDG stand-in: %s from %s\nbaseurl=file://%s\nenabled=1\ngpgcheck=0\n",
		p.Name, r.Server.Origin(), StandinRepo)
	nodes = append(nodes,
		node{Path: "/etc/yum.repos.d/pgdg-standin.repo", Mode: 0o644, Body: []byte(repo)},
		node{Path: "/etc/dnf/vars/releasever", Mode: 0o644, Body: []byte("9\n")},
	)
	return nodes, nil
}

// el9Base is the root file system of an EL9 stand-in on another Debian
// release than the base (for a server built for that release): its
// minbase with dnf and rpm.
func el9Base(suite string) baseRecipe {
	if suite == base.Suite {
		return base
	}
	return baseRecipe{suite, "minbase", []string{"dnf", "rpm"}, base.UID, ""}
}

// el9Libs is where an EL9 stand-in built from Debian's packages keeps the
// debs of the shared libraries its server needs until they are installed.
const el9Libs = "/srv/el9-libs"

// el9Run installs those libraries, then removes the debs (nothing of
// PostgreSQL's own but libpq). The release's rpm (6.1 in sid) keeps
// rpm 4.16's policy, %_pkgverify_level digest, so the unsigned stand-in
// installs from its gpgcheck=0 repository as on EL9.
func el9Run(r recipe) string {
	if r.Debian == "" {
		return ""
	}
	return "DEBIAN_FRONTEND=noninteractive dpkg -i " + el9Libs + "/*.deb && rm -rf " + el9Libs
}

// debianServerTree is a major's server and client from Debian's packages
// (the pinned ones of its source), laid out as PGDG's postgresqlN-server,
// and the debs of the shared libraries they need (with the libpq5 of the
// same source), to be installed in the image by el9Run.
//
// Debian's binaries look for their share and library directories where
// Debian puts them (PostgreSQL relocates its compiled-in paths only when
// the binary sits at the same depth under a common prefix, which
// /usr/pgsql-N/bin does not), so the package also holds the two links
// /usr/lib/postgresql/N and /usr/share/postgresql/N into /usr/pgsql-N.
func debianServerTree(e env, r recipe) (tree, libs []node, err error) {
	major := r.Server.Major
	src := r.source()
	pinned := src.pinned(major, r.Debian)
	debs, err := debianDebs(e, src, pinned...)
	if err != nil {
		return nil, nil, err
	}
	debPrefix, debShare := layout.Debian(major).Prefix, layout.Debian(major).ShareDir
	moves := []struct{ from, to string }{
		{debPrefix + "/", r.Layout.Prefix + "/"},
		{debShare + "/", r.Layout.ShareDir + "/"},
	}
	place := func(name string) (string, bool) {
		for _, m := range moves {
			if rest, ok := strings.CutPrefix(name, m.from); ok {
				return m.to + rest, true
			}
		}
		return "", false
	}
	var wantLibs []string
	for _, pkg := range []string{model.DebServerPackage(major), fmt.Sprintf("postgresql-client-%d", major)} {
		file := ""
		for name := range debs {
			if strings.HasPrefix(name, pkg+"_") {
				file = name
			}
		}
		if file == "" {
			return nil, nil, fmt.Errorf("apt brought no %s (of %s)", pkg, strings.Join(pinned, " "))
		}
		a, err := deb.Read(debs[file])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		control, err := a.ControlFile()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		wantLibs = append(wantLibs, libraryDepends(deb.ControlField(control, "Depends"))...)
		for _, m := range a.Data {
			dst, ok := place(strings.TrimPrefix(m.Name, "."))
			if !ok {
				continue // documentation, postgresql-common's hooks
			}
			switch m.Type {
			case tar.TypeReg:
				tree = append(tree, node{Path: dst, Mode: m.Mode & 0o7777, Body: m.Body})
			case tar.TypeSymlink:
				link := m.Link
				if path.IsAbs(link) {
					if moved, ok := place(link); ok {
						link = moved
					}
				}
				tree = append(tree, node{Path: dst, Link: link})
			}
		}
	}
	tree = append(tree, node{Path: debPrefix, Link: r.Layout.Prefix}, node{Path: debShare, Link: r.Layout.ShareDir})
	slices.SortFunc(tree, func(a, b node) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(wantLibs)
	libDebs, err := debianDebs(e, src, append(slices.Compact(wantLibs), "libpq5="+r.Debian)...)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(libDebs)) {
		libs = append(libs, node{Path: path.Join(el9Libs, name), Mode: 0o644, Body: libDebs[name]})
	}
	return tree, libs, nil
}

// libraryDepends are the shared libraries (and the time zone data, which
// Debian's server is built to read from the system) among a Depends
// field's packages: the first of each set of alternatives, without its
// version, leaving out libpq5 (taken at the pinned version) and
// PostgreSQL's own packages.
func libraryDepends(depends string) []string {
	var out []string
	for _, d := range strings.Split(depends, ",") {
		alt, _, _ := strings.Cut(d, "|")
		name, _, _ := strings.Cut(strings.TrimSpace(alt), " ")
		name, _, _ = strings.Cut(name, ":")
		if (strings.HasPrefix(name, "lib") && name != "libpq5") || name == "tzdata" {
			out = append(out, name)
		}
	}
	return out
}
