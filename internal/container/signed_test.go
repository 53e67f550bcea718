package container

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"runtime"
	"strings"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/artifact"
	"github.com/pglease/pglease-gen/internal/deb"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/rpm"
	"github.com/pglease/pglease-gen/internal/runner"
	"github.com/pglease/pglease-gen/internal/sign"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// signedBuild builds PostgreSQL 16's packages signed with a key made for
// the test; tamper may change the files before they are written.
func signedBuild(t *testing.T, tamper func(render.Files, *sign.Signer)) string {
	t.Helper()
	s := testenv.Signer(t, 2048)
	files, _, err := artifact.Build(context.Background(), artifact.Options{Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files,
		Majors: []int{16}, Distros: proofDistros, Suffix: model.Packages.Suffixes[0], Time: model.Packages.Released(), Sign: s})
	if err != nil {
		t.Fatal(err)
	}
	if tamper != nil {
		tamper(files, s)
	}
	dir := t.TempDir()
	if err := render.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The distributions the signed-build tests build: the EL9 stand-in's and
// the Debian image of 16's.
var (
	el9, _       = model.DistroNamed("el9")
	bookworm, _  = model.DistroNamed("bookworm")
	proofDistros = []model.Distro{el9, bookworm}
)

// install runs the dnf or apt installer of a signed build on 16 and
// returns the major's error (nil when the newest version's suites passed:
// what is proved here is the signed install; make matrix runs every
// version's suites, rpm-proof and deb-proof install signed trees on each
// major).
func install(t *testing.T, kind, dir string) error {
	t.Helper()
	p := pool(t)
	o := options(16, pglease.Files, "")
	o.NewestOnly = true
	var repo string
	var err error
	if kind == "rpm" {
		o.Image, o.Layout = images.EL9Repository, layout.PGDG
		repo, err = runner.FindRepo(dir, model.Packages, runtime.GOARCH)
	} else {
		o.Image = images.DebianRepository
		repo, err = runner.FindAptRepo(dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckImages(p, o.Image, []int{16}, runtime.GOARCH); err != nil {
		t.Fatalf("%v\n(make images builds them)", err)
	}
	signed := "repodata/repomd.xml.asc"
	if kind != "rpm" {
		signed = path.Join("dists", model.Packages.DebCodename, "InRelease")
	}
	key, err := runner.FindKey(dir, repo, signed, model.PgLease)
	if err != nil || key == nil {
		t.Fatalf("no public key in the signed build: %v", err)
	}
	if kind == "rpm" {
		o.Install = runner.DNFInstall(model.PgLease, repo, key, el9)
	} else {
		o.Install = runner.AptInstall(model.PgLease, repo, key, "")
	}
	rs, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	return rs[0].Err
}

var rpm16 = "pg_lease_16-" + model.PgLease.Version() + "-1PGSTY.el9.noarch.rpm"

// TestSignedInstalls: dnf with gpgcheck=1 and repo_gpgcheck=1, and apt
// without trusted=yes, install the signed packages and the suites pass.
func TestSignedInstalls(t *testing.T) {
	t.Parallel()
	dir := signedBuild(t, nil)
	for _, kind := range []string{"rpm", "deb"} {
		if err := install(t, kind, dir); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
}

// TestTamperingIsRefused flips one byte where each check must catch it;
// dnf and apt refuse with their own messages.
func TestTamperingIsRefused(t *testing.T) {
	t.Parallel()
	tree := rpm.RepoDir(model.Packages, model.ELArch(runtime.GOARCH))
	for _, c := range []struct {
		name, kind string
		tamper     func(render.Files, *sign.Signer)
		want       string
	}{
		{"a packaged file's payload", "rpm", func(f render.Files, s *sign.Signer) {
			name := path.Join(tree, rpm16)
			b := bytes.Clone(f[name])
			b[len(b)-64] ^= 0x01
			f[name] = b
			// a repository that matches the tampered package, signed: only
			// the package's own signature can catch it
			info, err := rpm.ReadInfo(rpm16, b)
			if err != nil {
				t.Fatal(err)
			}
			md, err := rpm.Repodata([]rpm.Info{info}, int(model.Packages.Released().Unix()))
			if err != nil {
				t.Fatal(err)
			}
			for n, body := range md {
				f[path.Join(tree, n)] = body
			}
			f[path.Join(tree, "repodata/repomd.xml.asc")], _ = s.Armored(md["repodata/repomd.xml"])
		}, "Error: GPG check FAILED"},
		{"repomd.xml", "rpm", func(f render.Files, _ *sign.Signer) {
			name := path.Join(tree, "repodata/repomd.xml")
			f[name] = bytes.Replace(f[name], []byte("<revision>"), []byte("<revision>1"), 1)
		}, "GPG signature verification error"},
		{"Packages", "deb", func(f render.Files, _ *sign.Signer) {
			for _, arch := range model.Packages.DebArches {
				dir := path.Join(deb.RepoDir, "dists", model.Packages.DebCodename, deb.Component, "binary-"+arch)
				b := bytes.Replace(f[path.Join(dir, "Packages")], []byte("Priority: optional"), []byte("Priority: optionaL"), 1)
				var gz bytes.Buffer
				zw := gzip.NewWriter(&gz)
				zw.Write(b)
				zw.Close()
				// at the name and where apt fetches it (by the hash the
				// Release gives: Acquire-By-Hash)
				for name, body := range map[string][]byte{"Packages": b, "Packages.gz": gz.Bytes()} {
					sum := sha256.Sum256(f[path.Join(dir, name)])
					f[path.Join(dir, "by-hash", "SHA256", hex.EncodeToString(sum[:]))] = body
					f[path.Join(dir, name)] = body
				}
			}
		}, "Hash Sum mismatch"},
		{"Release", "deb", func(f render.Files, _ *sign.Signer) {
			dir := path.Join(deb.RepoDir, "dists", model.Packages.DebCodename)
			for _, n := range []string{"Release", "InRelease"} {
				f[path.Join(dir, n)] = bytes.Replace(f[path.Join(dir, n)], []byte("Label: "), []byte("Label: x"), 1)
			}
		}, "signatures were invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := install(t, c.kind, signedBuild(t, c.tamper))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v; want %q", err, c.want)
			}
		})
	}
}

// TestStandinServerOnTrixie installs a deb whose server is a stand-in (16,
// which no Debian release ships) on Debian 13: the trixie image of 17
// offers the stand-in postgresql-16 beside Debian's own 17, apt takes the
// trixie suite of a signed build (checked with the image's gpgv and sqv),
// resolves postgresql-16 and its client from the image's repository, and
// a few cases of both suites and the update check run on 16.
func TestStandinServerOnTrixie(t *testing.T) {
	t.Parallel()
	p := pool(t)
	if err := CheckImages(p, images.DebianRepository, []int{17}, runtime.GOARCH); err != nil {
		t.Fatalf("%v\n(make images builds them)", err)
	}
	trixie, _ := model.DistroNamed("trixie")
	s := testenv.Signer(t, 2048)
	files, _, err := artifact.Build(context.Background(), artifact.Options{Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files,
		Majors: []int{16}, Distros: []model.Distro{trixie}, Suffix: model.Packages.Suffixes[0], Time: model.Packages.Released(), Sign: s})
	if err != nil {
		t.Fatal(err)
	}
	// a few of the newest version's cases: what is tested here is that
	// apt resolves the stand-in server and the package runs on it (the
	// matrix runs the whole suites on 16, deb-proof installs each
	// release's debs of Debian 12's majors and runs them)
	repo, o := aptSample(t, files)
	o.Layout = func(int) layout.Layout { return layout.Debian(16) }
	o.Install = runner.AptInstall(model.PgLease, repo, s.PublicKey(), "")
	rs, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if r.Err != nil || !r.Result.Passed() || !strings.HasPrefix(r.Server, "16.") {
		t.Errorf("postgresql-16-pg-lease on trixie: server %q, %v\n%s", r.Server, r.Err, r.Result.Diffs)
	}
}

// aptSample writes a build's files into a directory of the test's own and
// returns its apt repository and the options of a run of a few of the
// newest version's cases in the Debian image of 17.
func aptSample(t *testing.T, files render.Files) (string, Options) {
	t.Helper()
	dir := t.TempDir()
	if err := render.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	repo, err := runner.FindAptRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := embedded(t)
	testenv.OnlyTests(t, src, "regress/api", "regress/sessions", "isolation/rollback")
	o := options(17, src, "")
	o.Image, o.NewestOnly = images.DebianRepository, true
	return repo, o
}
