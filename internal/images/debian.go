package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/pglease/pglease-gen/internal/deb"
	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
)

// DebianRepository holds the images of the deb install proof: Debian with
// apt and a local apt repository offering postgresql-N, and nothing of that
// server installed until apt installs it. Where Debian itself ships the
// major (15 in bookworm, 17 in trixie, 18 in sid, 19 from experimental
// at its pinned version, on sid) the image is that
// release and the repository holds Debian's own packages (the server and
// every package it needs that the image lacks); for 14 and 16 it is Debian
// 12 with a postgresql-N deb built from the pinned server build in Debian's
// layout.
const DebianRepository = "pglease/debian"

// AptStandin is where the image's local apt repository sits.
const AptStandin = "/srv/debian-standin"

// aptFor is how this machine's apt looks at a Debian release (and the
// suite its PostgreSQL packages come from, if another): a private
// configuration and state under the cache, its package lists fetched once
// per hour at most. The options make apt-get and apt-cache use it.
func aptFor(ctx context.Context, o Options, src DebianSource) ([]string, error) {
	dir := aptDir(o, src)
	for _, d := range []string{"lists/partial", "archives/partial"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	list := filepath.Join(dir, "sources.list")
	// a stable release with its point-release updates and security fixes,
	// as a Debian host is set up (the security archive sits beside the main
	// one: deb.debian.org/debian-security)
	key := "[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]"
	suite := src.Suite
	lines := fmt.Sprintf("deb %s %s %s main\n", key, o.Mirror, suite)
	if suite != "sid" {
		lines += fmt.Sprintf("deb %s %s %s-updates main\ndeb %s %s-security %s-security main\n", key, o.Mirror, suite, key, o.Mirror, suite)
	}
	if src.Pocket != "" {
		// experimental is NotAutomatic: apt takes nothing from it unless a
		// package is asked for at one of its versions (the pinned ones)
		lines += fmt.Sprintf("deb %s %s %s main\n", key, o.Mirror, src.Pocket)
	}
	if err := os.WriteFile(list, []byte(lines), 0o644); err != nil {
		return nil, err
	}
	status := filepath.Join(dir, "empty.status")
	if _, err := os.Stat(status); err != nil {
		if err := os.WriteFile(status, nil, 0o644); err != nil {
			return nil, err
		}
	}
	opts := []string{"-o", "Dir::Etc::sourcelist=" + list, "-o", "Dir::Etc::sourceparts=-",
		"-o", "Dir::State::lists=" + filepath.Join(dir, "lists"), "-o", "Dir::Cache=" + dir,
		"-o", "Dir::Cache::archives=" + filepath.Join(dir, "archives"), "-o", "Dir::State::status=" + status,
		"-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root",
		"-o", "APT::Architecture=" + model.DebArch(o.Arch), "-o", "APT::Architectures=" + model.DebArch(o.Arch)}
	stamp := filepath.Join(dir, "updated")
	if st, err := os.Stat(stamp); err == nil && time.Since(st.ModTime()) < time.Hour {
		return opts, nil
	}
	out, err := exec.CommandContext(ctx, "apt-get", append(opts, "-qq", "update")...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("apt-get update for %s: %w\n%s", src, err, out)
	}
	return opts, os.WriteFile(stamp, nil, 0o644)
}

// String names the source as apt sees it: sid, or sid+experimental.
func (s DebianSource) String() string {
	if s.Pocket == "" {
		return s.Suite
	}
	return s.Suite + "+" + s.Pocket
}

// debianVersion is the version of a major's server package that src
// gives: its pin, checked to be there, or the release's current one.
func debianVersion(ctx context.Context, o Options, src DebianSource, name string) (string, error) {
	opts, err := aptFor(ctx, o, src)
	if err != nil {
		return "", err
	}
	want := name
	if src.Version != "" {
		want = name + "=" + src.Version
	}
	out, err := exec.CommandContext(ctx, "apt-cache", append(opts, "show", "--no-all-versions", want)...).Output()
	if err != nil {
		if src.Version != "" {
			return "", fmt.Errorf("Debian (%s) no longer offers %s %s: move the pin in internal/images/servers.go (apt-cache policy %s shows what it has): %w",
				src, name, src.Version, name, err)
		}
		return "", fmt.Errorf("apt-cache show %s in %s: %w", name, src, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "Version: "); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("apt-cache show %s in %s: no version", name, src)
}

// pinned are the packages to install, at version v, for a major's server
// from src: the server package, and from a pocket also the client and the
// libpq5 of the same source, which apt would otherwise take from Suite.
func (s DebianSource) pinned(major int, v string) []string {
	want := []string{model.DebServerPackage(major) + "=" + v}
	if s.Pocket != "" {
		want = append(want, fmt.Sprintf("postgresql-client-%d=%s", major, v), "libpq5="+v)
	}
	return want
}

// source is the recipe's Debian source.
func (r recipe) source() DebianSource {
	return DebianSource{Suite: r.Suite, Pocket: r.Pocket, Version: debianShips[r.Server.Major].Version}
}

// officialNodes are the layer of the matrix images (pglease/postgres:N):
// the server in the official images' layout, from Debian's own package
// where Debian ships the major (installed by officialRun from a
// repository of the downloaded packages), from the pinned build otherwise.
func officialNodes(b env, r recipe) ([]node, error) {
	if r.Debian == "" {
		return serverTree(b.tgz, r.Layout, psqlMajor)
	}
	return debianNodes(b, r)
}

// officialRun installs Debian's server package from the image's own
// repository, then removes the repository (the image keeps no package
// source it cannot reach).
func officialRun(r recipe) string {
	if r.Debian == "" {
		return ""
	}
	return installRun(r.source().pinned(r.Server.Major, r.Debian))
}

// installRun installs pkgs from the image's repository, then removes it.
func installRun(pkgs []string) string {
	return fmt.Sprintf("DEBIAN_FRONTEND=noninteractive apt-get -q -o APT::Sandbox::User=root update && "+
		"DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends -o Dpkg::Options::=--force-confold "+
		"-o APT::Sandbox::User=root install %s && "+
		"rm -rf %s /etc/apt/sources.list.d/debian-standin.list /var/lib/apt/lists/* /var/cache/apt/*.bin",
		strings.Join(pkgs, " "), AptStandin)
}

// debianNodes are the local apt repository (its debs, indexes and list
// file), an empty sources.list (the image has no network) and a
// policy-rc.d that keeps package scripts from starting services.
func debianNodes(b env, r recipe) ([]node, error) {
	major := r.Server.Major
	var debs map[string][]byte
	var err error
	if r.Debian != "" {
		debs, err = debianDebs(b, r.source(), append(r.source().pinned(major, r.Debian), r.Offers...)...)
		for _, s := range r.Standins {
			if err != nil {
				break
			}
			var tgz string
			var more map[string][]byte
			if tgz, err = fetch(b.ctx, b.o.CacheDir, s, b.say); err == nil {
				// its psql is the image's own major's client, which Debian's
				// server of that major brings into the repository
				more, err = standinDebOf(tgz, s, layout.Debian(s.Major), major, model.DebClientPackage(major))
			}
			for n, d := range more {
				debs[n] = d
			}
		}
	} else {
		debs, err = standinDeb(b, r)
	}
	if err != nil {
		return nil, err
	}
	files, err := deb.Repo(model.Packages, "", "postgresql", debs, nil, model.Packages.Released())
	if err != nil {
		return nil, err
	}
	var nodes []node
	for _, name := range files.Names() {
		nodes = append(nodes, node{Path: path.Join(AptStandin, name), Mode: 0o644, Body: files[name]})
	}
	list := fmt.Sprintf("deb [trusted=yes] file:%s/%s %s %s\n", AptStandin, deb.RepoDir, model.Packages.DebCodename, deb.Component)
	nodes = append(nodes,
		node{Path: "/etc/apt/sources.list.d/debian-standin.list", Mode: 0o644, Body: []byte(list)},
		node{Path: "/etc/apt/sources.list", Mode: 0o644, Body: []byte("# no network: see sources.list.d\n")},
		node{Path: "/usr/sbin/policy-rc.d", Mode: 0o755, Body: []byte("#!/bin/sh\n# no services in this image\nexit 101\n")},
		node{Path: "/etc/postgresql-common/createcluster.conf", Mode: 0o644, Body: []byte("create_main_cluster = false\n")},
	)
	return nodes, nil
}

// standinDeb is postgresql-N built from the pinned server build in
// Debian's layout.
func standinDeb(b env, r recipe) (map[string][]byte, error) {
	return standinDebOf(b.tgz, r.Server, r.Layout, psqlMajor, "")
}

// standinDebOf is the stand-in postgresql-N of server srv (its npm build
// tgz) in layout l, whose psql is postgresql-client-psqlFrom's; depends
// names what it needs that the image lacks.
func standinDebOf(tgz string, srv Server, l layout.Layout, psqlFrom int, depends string) (map[string][]byte, error) {
	tree, err := serverTree(tgz, l, psqlFrom)
	if err != nil {
		return nil, err
	}
	p := deb.Package{
		Name: model.DebServerPackage(srv.Major), Version: srv.Release() + "-0standin", Source: "postgresql-" + fmt.Sprint(srv.Major),
		Arch: model.DebArch(srv.Arch), Maintainer: model.Packages.Maintainer, Section: "database", Priority: "optional",
		Summary:     fmt.Sprintf("PostgreSQL %s server (stand-in from %s@%s)", srv.Release(), srv.Package(), srv.Version),
		Description: " The pinned server build laid out as Debian's postgresql-" + fmt.Sprint(srv.Major) + ", for the deb install proof.",
		BuildTime:   model.Packages.Released(), Gzip: true, Depends: depends,
	}
	for _, n := range tree {
		p.Files = append(p.Files, deb.File{Path: n.Path, Body: n.Body, Mode: n.Mode, Link: n.Link})
	}
	deb.SortFiles(p.Files)
	bin, err := deb.Pack(p)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{p.FileName(): bin}, nil
}

// debianDebs downloads, with this machine's apt, the Debian packages that
// installing want into the base image needs: want and each dependency the
// image does not have (apt reads the image's own dpkg status).
func debianDebs(b env, src DebianSource, want ...string) (debs map[string][]byte, err error) {
	key := b.baseRef + " " + src.String() + " " + strings.Join(want, " ")
	if d, ok := b.debs[key]; ok {
		return d, nil
	}
	defer func() {
		if err == nil {
			b.debs[key] = debs
		}
	}()
	opts, err := aptFor(b.ctx, b.o, src)
	if err != nil {
		return nil, err
	}
	status, err := readFromImage(b.c, b.baseRef, "/var/lib/dpkg/status")
	if err != nil {
		return nil, err
	}
	dir := aptDir(b.o, src)
	statusFile := filepath.Join(dir, "base.status")
	if err := os.WriteFile(statusFile, status, 0o644); err != nil {
		return nil, err
	}
	opts = append(opts, "-o", "Dir::State::status="+statusFile) // the last one counts
	b.say("downloading %s from %s and what the base image lacks for it, with apt", strings.Join(want, " "), src)
	// apt leaves out of --print-uris what its archive directory already
	// holds: ask with an empty one, so the list is complete
	empty, err := os.MkdirTemp("", "pglease-apt-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(empty)
	os.Mkdir(filepath.Join(empty, "partial"), 0o755)
	install := append([]string{"install", "--download-only", "-y", "-qq", "--no-install-recommends"}, want...)
	out, err := exec.CommandContext(b.ctx, "apt-get", append(append(opts, "-o", "Dir::Cache::archives="+empty, "--print-uris"), install...)...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("apt-get install --print-uris %s: %w\n%s", want, err, out)
	}
	// each line: 'URI' file size checksum
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && strings.HasSuffix(f[1], ".deb") {
			names = append(names, f[1])
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("apt-get names no package to download for %s:\n%s", want, out)
	}
	if out, err := exec.CommandContext(b.ctx, "apt-get", append(opts, install...)...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("apt-get install --download-only %s: %w\n%s", want, err, out)
	}
	debs = map[string][]byte{}
	for _, n := range names {
		if debs[n], err = os.ReadFile(filepath.Join(dir, "archives", n)); err != nil {
			return nil, err
		}
	}
	return debs, nil
}

// readFromImage reads one file from an image, through a container that
// is created and removed but never started.
func readFromImage(c *dc.Client, ref, file string) ([]byte, error) {
	ct, err := c.CreateContainer(dc.CreateContainerOptions{Config: &dc.Config{Image: ref, Cmd: []string{"true"}}})
	if err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", file, ref, err)
	}
	defer c.RemoveContainer(dc.RemoveContainerOptions{ID: ct.ID, Force: true})
	var buf bytes.Buffer
	if err := c.DownloadFromContainer(ct.ID, dc.DownloadFromContainerOptions{Path: file, OutputStream: &buf}); err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", file, ref, err)
	}
	return untarOne(buf.Bytes())
}

// untarOne returns the first regular file of a tar archive.
func untarOne(b []byte) ([]byte, error) {
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("no file in the archive: %w", err)
		}
		if h.Typeflag == tar.TypeReg {
			return io.ReadAll(tr)
		}
	}
}

// aptDir holds apt's private state for a source and architecture.
func aptDir(o Options, src DebianSource) string {
	suite := src.String()
	if o.Arch == firstArch {
		return filepath.Join(o.CacheDir, "apt-"+suite)
	}
	return filepath.Join(o.CacheDir, "apt-"+suite+"-"+o.Arch)
}

// DebianBuildRepository holds the images a Debian packager builds the
// source package in (pglease-gen images --deb-build): the release Debian
// ships a major in, with the server and everything the tarball's
// debian/control.in names in Build-Depends installed from the image's
// release, so that a plain `dpkg-buildpackage -b -us -uc` builds and tests
// there with no network. Only for the majors Debian ships.
const DebianBuildRepository = "pglease/debian-build"

// buildDepends are the packages of a build image beyond the server: what
// deb/control.in.tmpl's Build-Depends name, with build-essential, which
// dpkg-checkbuilddeps requires of every build. Where the major comes from
// a pocket (19 from experimental), its server-dev package comes from
// there too, at the server's version; the release's postgresql-all brings
// the release's own majors beside it. A drift from control.in fails the
// build in the image (dpkg-checkbuilddeps), which TestSourcePackageInImages
// runs.
func buildDepends(src DebianSource, major int, v string) []string {
	want := []string{"build-essential", "debhelper", "postgresql-all", "postgresql-server-dev-all"}
	if src.Pocket != "" {
		want = append(want, fmt.Sprintf("postgresql-server-dev-%d=%s", major, v), "libpq-dev="+v)
	}
	return want
}

// buildNodes are debianNodes with the host setting that makes every
// installed server-dev package's major a supported one for pg_buildext
// (postgresql-common's supported_versions(5): the token "installed"). On
// a release whose default list already names the image's major it changes
// nothing; on sid with experimental's 19 it is what makes 19 a build
// target, as on a packager's host that installed it.
func buildNodes(b env, r recipe) ([]node, error) {
	nodes, err := debianNodes(b, r)
	if err != nil {
		return nil, err
	}
	return append(nodes, node{Path: "/etc/postgresql-common/supported_versions", Mode: 0o644,
		Body: []byte("# every major whose postgresql-server-dev-N is installed\ninstalled\n")}), nil
}

// buildRun installs the server and the build dependencies from the
// image's repository, then removes it.
func buildRun(r recipe) string {
	return installRun(append(r.source().pinned(r.Server.Major, r.Debian), r.Offers...))
}
