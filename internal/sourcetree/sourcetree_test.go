package sourcetree

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/testenv"
)

func sources(t *testing.T) render.Files {
	t.Helper()
	d, err := NewData(model.PgLease, model.Packages, pglease.Files, model.Packages.Suffixes[0])
	if err != nil {
		t.Fatal(err)
	}
	files, err := Sources(d, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestMETAIsValid checks the shipped META.json against PGXN's meta spec
// and the model: its version, its file, PostgreSQL 14.0.0 as the prereq.
func TestMETAIsValid(t *testing.T) {
	files := sources(t)
	if err := CheckMETA(files["META.json"], files); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version  string
		Provides map[string]struct{ File, Version string }
		Prereqs  struct {
			Runtime struct{ Requires map[string]string }
		}
	}
	if err := json.Unmarshal(files["META.json"], &m); err != nil {
		t.Fatal(err)
	}
	p := m.Provides[model.PgLease.Name]
	if m.Version != model.PgLease.Version() || p.Version != m.Version || p.File != model.PgLease.ScriptFile() ||
		m.Prereqs.Runtime.Requires["PostgreSQL"] != fmt.Sprintf("%d.0.0", model.PgLease.MinMajor()) {
		t.Errorf("META.json: version %s, provides %+v, prereqs %v", m.Version, p, m.Prereqs.Runtime.Requires)
	}
}

// TestCheckMETACatchesBrokenMeta breaks the shipped META.json one key at a
// time: each is refused, naming the key.
func TestCheckMETACatchesBrokenMeta(t *testing.T) {
	files := sources(t)
	for _, c := range []struct {
		what string
		edit func(map[string]any)
		want string
	}{
		{"no abstract", func(m map[string]any) { delete(m, "abstract") }, "abstract: missing"},
		{"no maintainer", func(m map[string]any) { delete(m, "maintainer") }, "maintainer: missing"},
		{"a version that is not SemVer", func(m map[string]any) { m["version"] = "0.3" }, `version: "0.3" is not a semantic version`},
		{"a license PGXN does not name", func(m map[string]any) { m["license"] = "PostgreSQL License" }, "license: \"PostgreSQL License\" is not one of"},
		{"no provides", func(m map[string]any) { delete(m, "provides") }, "provides: missing"},
		{"provides without a file", func(m map[string]any) {
			delete(m["provides"].(map[string]any)[model.PgLease.Name].(map[string]any), "file")
		}, "provides." + model.PgLease.Name + ".file: missing"},
		{"provides a file not in the tree", func(m map[string]any) {
			m["provides"].(map[string]any)[model.PgLease.Name].(map[string]any)["file"] = "sql/pg_lease.sql"
		}, "sql/pg_lease.sql is not in the distribution"},
		{"a provided version that is not SemVer", func(m map[string]any) {
			m["provides"].(map[string]any)[model.PgLease.Name].(map[string]any)["version"] = "v0.3.0"
		}, "provides." + model.PgLease.Name + ".version"},
		{"a prereq that is not SemVer", func(m map[string]any) {
			m["prereqs"].(map[string]any)["runtime"].(map[string]any)["requires"].(map[string]any)["PostgreSQL"] = "14"
		}, "prereqs.runtime.requires.PostgreSQL"},
		{"no meta-spec", func(m map[string]any) { delete(m, "meta-spec") }, "meta-spec: missing"},
	} {
		var m map[string]any
		if err := json.Unmarshal(files["META.json"], &m); err != nil {
			t.Fatal(err)
		}
		c.edit(m)
		b, _ := json.Marshal(m)
		if err := CheckMETA(b, files); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.what, err, c.want)
		}
	}
}

// TestZipIsTheTarballsTree unzips the PGXN zip: the tarball's files under
// pg_lease-VERSION/, byte for byte, and two zips of one input are equal.
func TestZipIsTheTarballsTree(t *testing.T) {
	files := sources(t)
	when := model.Packages.Released()
	a, err := Zip(files, model.PgLease.SourceDir(), when)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Zip(files, model.PgLease.SourceDir(), when)
	if !bytes.Equal(a, b) {
		t.Error("two zips of the same tree differ")
	}
	zr, err := zip.NewReader(bytes.NewReader(a), int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, model.PgLease.SourceDir()+"/") || !f.Modified.Equal(when) {
			t.Errorf("%s: outside %s/ or dated %s", f.Name, model.PgLease.SourceDir(), f.Modified)
		}
		if f.FileInfo().IsDir() {
			continue
		}
		rc, _ := f.Open()
		var body bytes.Buffer
		body.ReadFrom(rc)
		rc.Close()
		name := strings.TrimPrefix(f.Name, model.PgLease.SourceDir()+"/")
		if !bytes.Equal(body.Bytes(), files[name]) {
			t.Errorf("%s differs from the tree's", name)
		}
		if want := map[bool]os.FileMode{false: 0o644, true: 0o755}[Executables[name]]; f.Mode().Perm() != want {
			t.Errorf("%s: mode %v", name, f.Mode())
		}
		seen++
	}
	if seen != len(files) {
		t.Errorf("%d files in the zip, %d in the tree", seen, len(files))
	}
}

// TestPGXNZipInstalls is what pgxn install and pg-build-test do with the
// release zip: unzip, make, make install, make installcheck against a
// throwaway server. It runs on a private copy of this machine's
// PostgreSQL 15 (PostgreSQL finds its directories relative to its
// binaries, so the copy is a whole installation), so that make install
// writes only inside the test's directory.
func TestPGXNZipInstalls(t *testing.T) {
	testenv.Server(t)
	testenv.Tools(t, "make", "unzip", "cp")
	const major = 15
	for _, d := range []string{fmt.Sprintf("/usr/lib/postgresql/%d/lib/pgxs", major), fmt.Sprintf("/usr/lib/postgresql/%d/bin/pg_config", major)} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("needs PostgreSQL %d with its server-dev package (make deps installs them): %v", major, err)
		}
	}
	// the server runs as postgres, which must reach its files
	top, err := os.MkdirTemp("", "pglease-pgxn-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	run := func(dir string, argv ...string) {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
	for _, d := range []string{"usr/lib/postgresql", "usr/share/postgresql"} {
		os.MkdirAll(filepath.Join(top, d), 0o755)
		run(top, "cp", "-a", filepath.Join("/", d, fmt.Sprint(major)), filepath.Join(top, d))
	}
	pgConfig := filepath.Join(top, fmt.Sprintf("usr/lib/postgresql/%d/bin/pg_config", major))
	z, err := Zip(sources(t), model.PgLease.SourceDir(), model.Packages.Released())
	if err != nil {
		t.Fatal(err)
	}
	zipFile := filepath.Join(top, model.PgLease.PGXNZip())
	os.WriteFile(zipFile, z, 0o644)
	run(top, "unzip", "-q", zipFile)
	src := filepath.Join(top, model.PgLease.SourceDir())
	run(src, "make", "PG_CONFIG="+pgConfig)
	run(src, "make", "install", "PG_CONFIG="+pgConfig)
	inst, err := pgserver.FindInstall(context.Background(), pgConfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(inst.ExtensionDir(), top) {
		t.Fatalf("the copy's extension directory is %s, outside the copy", inst.ExtensionDir())
	}
	if _, err := os.Stat(filepath.Join(inst.ExtensionDir(), model.PgLease.ControlFile())); err != nil {
		t.Fatalf("make install did not install into the copy: %v", err)
	}
	srv, err := pgserver.Start(context.Background(), inst, top)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	os.Chmod(src, 0o777) // pg_regress writes its results here, as the caller
	cmd := exec.Command("make", "installcheck", "PG_CONFIG="+pgConfig)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "PGHOST="+srv.Socket(), fmt.Sprintf("PGPORT=%d", srv.Port), "PGUSER="+srv.User)
	out, err := cmd.CombinedOutput()
	if err != nil {
		diffs, _ := os.ReadFile(filepath.Join(src, "regression.diffs"))
		t.Fatalf("make installcheck: %v\n%s\n%s", err, out, diffs)
	}
	for _, want := range []string{"All " + fmt.Sprint(len(strings.Fields(findLine(t, src, "REGRESS = ")))) + " tests passed", "tests passed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make installcheck says:\n%s\nwant %q", out, want)
		}
	}
}

// findLine is the rest of the Makefile line that starts with prefix.
func findLine(t *testing.T, dir, prefix string) string {
	b, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if s, ok := strings.CutPrefix(l, prefix); ok {
			return s
		}
	}
	t.Fatalf("no %q in the Makefile", prefix)
	return ""
}

// TestMakefileMajorGate runs the tarball's Makefile with a pg_config that
// reports each kind of version PostgreSQL prints: a release, a Debian
// package's, a release candidate, a beta and a development build of a
// supported major pass its check; a major below the oldest supported is
// refused, naming the version.
func TestMakefileMajorGate(t *testing.T) {
	testenv.Tools(t, "make", "expr")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), sources(t)["Makefile"], 0o644); err != nil {
		t.Fatal(err)
	}
	// PGXS: an empty makefile, so that only the gate can fail
	if err := os.WriteFile(filepath.Join(dir, "pgxs.mk"), []byte("all:\n\t@echo built\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	min := model.PgLease.MinMajor()
	for _, c := range []struct {
		version string
		ok      bool
	}{
		{fmt.Sprintf("PostgreSQL %d.2", min), true},
		{"PostgreSQL 17.12 (Debian 17.12-0+deb13u1)", true},
		{"PostgreSQL 19rc1 (Debian 19~rc1-1)", true},
		{"PostgreSQL 19beta2", true},
		{"PostgreSQL 19devel", true},
		{fmt.Sprintf("PostgreSQL %d.22", min-1), false},
		{fmt.Sprintf("PostgreSQL %dbeta1", min-1), false},
	} {
		fake := filepath.Join(dir, "pg_config")
		script := fmt.Sprintf("#!/bin/sh\ncase \"$1\" in --version) echo '%s' ;; --pgxs) echo %s/pgxs.mk ;; esac\n", c.version, dir)
		if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("make", "-s", "PG_CONFIG="+fake)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		refused := strings.Contains(string(out), fmt.Sprintf("needs PostgreSQL %d or newer", min))
		switch {
		case c.ok && (err != nil || refused):
			t.Errorf("%q: the Makefile refused it (%v):\n%s", c.version, err, out)
		case !c.ok && (err == nil || !refused || !strings.Contains(string(out), c.version)):
			t.Errorf("%q: the Makefile did not refuse it naming the version (%v):\n%s", c.version, err, out)
		}
	}
}

// TestTarballREADMEIsTheExtensionsPage: the tarball's README.md (the PGXN
// zip's, META.json's docfile) is the repository README's extension page
// under the extension's name, without the tool's commands, and every
// relative link of every page the tarball carries resolves to a file in
// it; links to files it does not carry point to the project at the
// version's tag.
func TestTarballREADMEIsTheExtensionsPage(t *testing.T) {
	files, err := Upstream(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(files["README.md"])
	if !strings.HasPrefix(readme, "# "+model.PgLease.Name+"\n") || strings.Contains(readme, "make test") || strings.Contains(readme, "<!--") {
		t.Errorf("the tarball's README is not the extension's page:\n%.400s", readme)
	}
	for _, want := range []string{"docs/reference.md", "CHANGELOG.md", "docs/upgrading.md"} {
		if files[want] == nil {
			t.Errorf("the tarball does not carry %s", want)
		}
	}
	links := 0
	for name, b := range files {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		for _, m := range markdownLink.FindAllStringSubmatch(string(b), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, ":") {
				continue
			}
			links++
			if files[path.Clean(path.Join(path.Dir(name), target))] == nil {
				t.Errorf("%s links to %s, which the tarball does not carry", name, m[1])
			}
		}
	}
	if links < 10 {
		t.Errorf("only %d relative links checked", links)
	}
	if !strings.Contains(string(files["docs/performance.md"]), model.Packages.URL+"/blob/v"+model.PgLease.Version()+"/bench/results/") {
		t.Error("a link to bench/results/ is not made the project's at the version")
	}
}
