package container

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	dc "github.com/ory/dockertest/v3/docker"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/artifact"
	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/runner"
)

// mountPoint is where CloudNativePG mounts the image of an extension.
const mountPoint = "/extensions/pg_lease"

// TestImageVolume is CloudNativePG's way of installing pg_lease: the
// build's docker save tarball of this machine's platform is loaded into
// the daemon, the files are taken from the loaded image (not from the
// build), put at /extensions/pg_lease in the major's container, and the
// server starts with extension_control_path = '$system:/extensions/
// pg_lease/share'; both suites (the newest version's) and the update
// checks must pass on 18 and 19. PostgreSQL 17 must refuse the setting,
// and the build offers it no image.
func TestImageVolume(t *testing.T) {
	t.Parallel()
	p := pool(t)
	needImages(t, p, 17, 18, 19)
	files, _, err := artifact.Build(context.Background(), artifact.Options{Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files,
		Majors: []int{17, 18, 19}, Distros: proofDistros, Suffix: model.Packages.Suffixes[0], Time: model.Packages.Released()})
	if err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if strings.HasPrefix(name, artifact.ImagesDir+"/") && strings.Contains(name, "-17-") {
			t.Errorf("the build offers an image for PostgreSQL 17: %s", name)
		}
	}
	volume := map[int][]byte{}
	for _, major := range []int{18, 19} {
		tag := model.CNPG.Tag(model.PgLease, major)
		archive := files[artifact.ImagesDir+"/"+model.PgLease.Name+"-"+tag+"."+runtime.GOARCH+".docker.tar"]
		if archive == nil {
			t.Fatalf("no docker archive of %s for %s", tag, runtime.GOARCH)
		}
		// a tag of this test's own, so that it removes only what it loaded
		ref := model.CNPG.Repository + ":" + tag
		if err := p.Client.LoadImage(dc.LoadImageOptions{InputStream: bytes.NewReader(archive)}); err != nil {
			t.Fatalf("docker load %s: %v", tag, err)
		}
		t.Cleanup(func() { p.Client.RemoveImageExtended(ref, dc.RemoveImageOptions{Force: true}) })
		img, err := p.Client.InspectImage(ref)
		if err != nil {
			t.Fatal(err)
		}
		if img.Architecture != runtime.GOARCH || img.Config.Labels["io.cloudnativepg.image.base.pgmajor"] != fmt.Sprint(major) {
			t.Errorf("%s: %s, labels %v", ref, img.Architecture, img.Config.Labels)
		}
		if volume[major], err = docker.ImageFiles(p.Client, ref, "/share", "/licenses"); err != nil {
			t.Fatal(err)
		}
	}
	// 18 and 19 at once, each with the files of its own image
	o := options(18, pglease.Files, "")
	o.Majors, o.Jobs, o.NewestOnly = []int{18, 19}, 2, true
	o.Install = func(ctx context.Context, t runner.Target, stage func(string)) (func(context.Context) error, error) {
		return runner.ImageVolume(volume[t.Layout().Major], mountPoint)(ctx, t, stage)
	}
	o.Settings = []string{runner.ImageVolumeSetting(mountPoint)}
	rs, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err != nil || !r.Result.Passed() {
			t.Errorf("PostgreSQL %d with the image volume: %v\n%s", r.Major, r.Err, r.Result.Diffs)
		}
	}
	// without the setting the server does not see the files: the suites
	// fail (what shows that the runs above used the image's files)
	o = options(18, pglease.Files, "")
	o.NewestOnly = true
	o.Install = runner.ImageVolume(volume[18], mountPoint)
	rs, err = Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if r := rs[0]; r.Err == nil && r.Result.Passed() {
		t.Error("PostgreSQL 18 without extension_control_path passed: the suites did not need the image's files")
	}
	o = options(17, pglease.Files, "")
	o.NewestOnly = true
	o.Install = runner.ImageVolume(volume[18], mountPoint)
	o.Settings = []string{runner.ImageVolumeSetting(mountPoint)}
	rs, err = Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Err == nil || !strings.Contains(rs[0].Err.Error(), `unrecognized configuration parameter "extension_control_path"`) {
		t.Errorf("PostgreSQL 17 with extension_control_path: %v; want the server to refuse it", rs[0].Err)
	}
}
