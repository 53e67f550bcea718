package container

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/artifact"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/runner"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// TestGrownRepositoryInstallsEveryVersion: a signed tree of 0.5.0 (built
// as it was published), then 0.5.1 built --into it. On the EL9 stand-in
// dnf installs the newest, `dnf downgrade` goes back to 0.5.0 and
// `dnf upgrade` forward again; on Debian apt installs the newest,
// `apt-get install NAME=0.5.0-…` goes back and a plain install forward;
// each step's installed version is read from rpm and dpkg, and the
// newest version's suites then pass. Signatures are checked throughout.
func TestGrownRepositoryInstallsEveryVersion(t *testing.T) {
	t.Parallel()
	s := testenv.Signer(t, 2048)
	var held render.Files
	for _, v := range []string{"0.5.0", "0.5.1"} {
		ext, pkg, err := model.AsPublished(v)
		if err != nil {
			t.Fatal(err)
		}
		held, _, err = artifact.Build(context.Background(), artifact.Options{Ext: ext, Pkg: pkg, Src: pglease.Files,
			Majors: []int{16}, Distros: proofDistros, Suffix: model.Packages.Suffixes[0], Time: pkg.Released(), Sign: s, Held: held})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
	dir := t.TempDir()
	if err := render.Write(dir, held); err != nil {
		t.Fatal(err)
	}
	p := pool(t)
	for _, kind := range []string{"rpm", "deb"} {
		o := options(16, pglease.Files, "")
		o.NewestOnly = true
		var repo, signed string
		var err error
		if kind == "rpm" {
			o.Image, o.Layout = images.EL9Repository, layout.PGDG
			repo, err = runner.FindRepo(dir, model.Packages, runtime.GOARCH)
			signed = "repodata/repomd.xml.asc"
		} else {
			o.Image = images.DebianRepository
			repo, err = runner.FindAptRepo(dir)
			signed = "dists/" + model.Packages.DebCodename + "/InRelease"
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckImages(p, o.Image, []int{16}, runtime.GOARCH); err != nil {
			t.Fatalf("%v\n(make images builds them)", err)
		}
		key, err := runner.FindKey(dir, repo, signed, model.PgLease)
		if err != nil || key == nil {
			t.Fatalf("no public key in the signed build: %v", err)
		}
		var steps []string
		if kind == "rpm" {
			o.Install = versions(runner.DNFInstall(model.PgLease, repo, key, el9), &steps,
				[]string{"rpm", "-q", "--qf", "%{VERSION}", model.PgLease.PackageName(16)},
				step{[]string{"dnf", "--releasever=" + el9.Version, "downgrade", "-y", model.PgLease.PackageName(16)}, "0.5.0"},
				step{[]string{"dnf", "--releasever=" + el9.Version, "upgrade", "-y", model.PgLease.PackageName(16)}, "0.5.1"})
		} else {
			name := model.PgLease.DebPackage(16)
			apt := []string{"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-q", "-y", "-o", "APT::Sandbox::User=root", "install", "--no-install-recommends"}
			o.Install = versions(runner.AptInstall(model.PgLease, repo, key, ""), &steps,
				[]string{"dpkg-query", "-W", "-f", "${Version}", name},
				step{append(apt, "--allow-downgrades", name+"="+model.Packages.DebVersion("0.5.0", 1, model.Packages.Suffixes[0])), model.Packages.DebVersion("0.5.0", 1, model.Packages.Suffixes[0])},
				step{append(apt, name), model.Packages.DebVersion("0.5.1", 1, model.Packages.Suffixes[0])})
		}
		rs, err := Run(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		if rs[0].Err != nil || !rs[0].Passed() {
			t.Errorf("%s: %v (steps: %s)", kind, rs[0].Err, strings.Join(steps, "; "))
			continue
		}
		t.Logf("%s: %s", kind, strings.Join(steps, "; "))
	}
}

// step is a package command and the version it must leave installed.
type step struct {
	argv []string
	want string
}

// versions is install followed by the steps, each checked by reading the
// installed version with query.
func versions(install runner.Installer, log *[]string, query []string, steps ...step) runner.Installer {
	return func(ctx context.Context, t runner.Target, stage func(string)) (func(context.Context) error, error) {
		check, err := install(ctx, t, stage)
		if err != nil {
			return nil, err
		}
		v, err := runner.Output(ctx, t.Root(), query...)
		if err != nil {
			return nil, err
		}
		*log = append(*log, "install: "+string(v))
		if !strings.HasPrefix(string(v), model.PgLease.Version()) {
			return nil, fmt.Errorf("the install put in %s, not the newest version %s", v, model.PgLease.Version())
		}
		for _, s := range steps {
			stage(strings.Join(s.argv, " "))
			if _, err := runner.Output(ctx, t.Root(), s.argv...); err != nil {
				return nil, err
			}
			v, err := runner.Output(ctx, t.Root(), query...)
			if err != nil {
				return nil, err
			}
			*log = append(*log, strings.Join(s.argv[len(s.argv)-3:], " ")+": "+string(v))
			if got := strings.TrimSpace(string(v)); !strings.HasPrefix(got, s.want) {
				return nil, fmt.Errorf("after %s the installed version is %s, not %s", strings.Join(s.argv, " "), got, s.want)
			}
		}
		return check, nil
	}
}

// TestMergedSubsetsInstallBoth: --pg 16 for trixie, then --pg 17 for
// trixie --into the same signed tree: one suite lists both majors' debs
// (and one .dsc), and on Debian 13 apt installs both from it, 17's against
// Debian's postgresql-17 and 16's against the image's stand-in
// postgresql-16; then 17's suites pass.
func TestMergedSubsetsInstallBoth(t *testing.T) {
	t.Parallel()
	p := pool(t)
	if err := CheckImages(p, images.DebianRepository, []int{17}, runtime.GOARCH); err != nil {
		t.Fatalf("%v\n(make images builds them)", err)
	}
	trixie, _ := model.DistroNamed("trixie")
	s := testenv.Signer(t, 2048)
	var held render.Files
	for _, major := range []int{16, 17} {
		var err error
		held, _, err = artifact.Build(context.Background(), artifact.Options{Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files,
			Majors: []int{major}, Distros: []model.Distro{trixie}, Suffix: model.Packages.Suffixes[0], Time: model.Packages.Released(), Sign: s, Held: held})
		if err != nil {
			t.Fatalf("--pg %d: %v", major, err)
		}
	}
	repo, o := aptSample(t, held)
	install := runner.AptInstall(model.PgLease, repo, s.PublicKey(), "")
	var versions string
	o.Install = func(ctx context.Context, tg runner.Target, stage func(string)) (func(context.Context) error, error) {
		check, err := install(ctx, tg, stage)
		if err != nil {
			return nil, err
		}
		other := model.PgLease.DebPackage(16)
		stage("apt-get install -y " + other)
		if _, err := runner.Output(ctx, tg.Root(), "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-q", "-y", "-o", "APT::Sandbox::User=root", "install", "--no-install-recommends", other); err != nil {
			return nil, err
		}
		out, err := runner.Output(ctx, tg.Root(), "dpkg-query", "-W", "-f", "${Package} ${Version}\n", model.PgLease.DebPackage(16), model.PgLease.DebPackage(17))
		if err != nil {
			return nil, err
		}
		versions = string(out)
		return check, nil
	}
	rs, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, major := range []int{16, 17} {
		want += model.PgLease.DebPackage(major) + " " + model.Packages.For(trixie).DebVersion(model.PgLease.Version(), 1, model.Packages.Suffixes[0]) + "\n"
	}
	if rs[0].Err != nil || !rs[0].Passed() || versions != want {
		t.Errorf("both majors from one merged tree: %v; installed:\n%s\nwant:\n%s", rs[0].Err, versions, want)
	} else {
		t.Logf("installed from one suite:\n%s", versions)
	}
}
