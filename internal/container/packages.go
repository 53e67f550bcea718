package container

import (
	"fmt"
	"path"

	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/runner"
)

// FromRPMs makes the run install pg_lease with dnf from the signed
// repository in dir (a build's output, or one of its elN.ARCH trees) for
// the EL release d, checked with the key beside it, into the PGDG layout;
// in the EL9 stand-in image unless the image was given. It returns the
// majors of majors that d ships (an error if none).
func (o *Options) FromRPMs(dir string, d model.Distro, majors []int, imageGiven bool) ([]int, error) {
	repo, err := runner.FindRepo(dir, model.Packages.For(d), o.Arch)
	if err != nil {
		return nil, err
	}
	key, err := runner.FindKey(dir, repo, "repodata/repomd.xml.asc", o.Ext)
	if err != nil {
		return nil, err
	}
	if !imageGiven {
		o.Image = images.EL9Repository
	}
	o.Layout = layout.PGDG
	o.Install = runner.DNFInstall(o.Ext, repo, key, d)
	if majors = d.MajorsOf(majors); len(majors) == 0 {
		return nil, fmt.Errorf("%s gets none of the majors asked for", d.Title())
	}
	return majors, nil
}

// FromDebs makes the run install pg_lease with apt from the signed
// repository in dir (a build's output, or its apt/ tree), checked with
// the key beside it, into Debian's layout, from the suite of distro (""
// for the image's own release); in the Debian stand-in image unless the
// image was given.
func (o *Options) FromDebs(dir, distro string, imageGiven bool) error {
	repo, err := runner.FindAptRepo(dir)
	if err != nil {
		return err
	}
	suites := runner.AptSuites(repo)
	key, err := runner.FindKey(dir, repo, path.Join("dists", suites[0], "InRelease"), o.Ext)
	if err != nil {
		return err
	}
	if !imageGiven {
		o.Image = images.DebianRepository
	}
	o.Layout = layout.Debian
	o.Install = runner.AptInstall(o.Ext, repo, key, distro)
	return nil
}

// Plan splits the majors into those to run and those to skip: the local
// images cannot have a major that has no server build for the
// architecture, so with all (--pg all) it is skipped, saying why; named,
// it is an error before anything runs. An image of the user's runs
// whatever it has.
func Plan(majors []int, arch, image string, all bool) (run []int, skipped []MajorResult, err error) {
	if !images.Local(image) {
		return majors, nil, nil
	}
	run, missing, err := images.Buildable(majors, arch, all)
	for _, m := range missing {
		skipped = append(skipped, MajorResult{Major: m.Major, Image: images.Ref(image, m.Major, arch), Skipped: m.Why.Error()})
	}
	return run, skipped, err
}
