package oci

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/testenv"
)

func images(t *testing.T, built time.Time) (render.Files, []Image) {
	t.Helper()
	ext, err := render.InstallFiles(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	files, imgs, err := Images(model.PgLease, model.CNPG, ext, []byte("license\n"), model.PgLease.Majors, built, "cnpg")
	if err != nil {
		t.Fatal(err)
	}
	return files, imgs
}

// TestLayoutIsAnOCIImageIndex walks each layout from index.json down:
// every descriptor's blob exists with its digest and size, the image
// index holds linux/amd64 and linux/arm64, each config names its
// platform, CloudNativePG's labels and the extension's files in the
// layer; only majors from 18 get an image.
func TestLayoutIsAnOCIImageIndex(t *testing.T) {
	built := model.Packages.Released()
	files, imgs := images(t, built)
	var majors []int
	for _, im := range imgs {
		majors = append(majors, im.Major)
	}
	if want := model.CNPG.MajorsOf(model.PgLease.Majors); len(want) == 0 || want[0] != 18 || len(majors) != len(want) {
		t.Fatalf("images for %v, want %v", majors, want)
	}
	for _, im := range imgs {
		blob := func(d descriptor) []byte {
			t.Helper()
			b := files[path.Join(im.Dir, "blobs/sha256", strings.TrimPrefix(d.Digest, "sha256:"))]
			sum := sha256.Sum256(b)
			if b == nil || "sha256:"+hex.EncodeToString(sum[:]) != d.Digest || len(b) != d.Size {
				t.Fatalf("%s: blob %s missing or not of its digest and size", im.Dir, d.Digest)
			}
			return b
		}
		var top indexJSON
		if err := json.Unmarshal(files[path.Join(im.Dir, "index.json")], &top); err != nil || len(top.Manifests) != 1 {
			t.Fatalf("%s/index.json: %v", im.Dir, err)
		}
		if top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != im.Tag || im.Tag != model.PgLease.Version()+"-"+itoa(im.Major)+"-trixie" {
			t.Errorf("%s: tag %q", im.Dir, im.Tag)
		}
		var idx indexJSON
		json.Unmarshal(blob(top.Manifests[0]), &idx)
		var platforms []string
		for _, m := range idx.Manifests {
			platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
			var man manifest
			json.Unmarshal(blob(m), &man)
			var cfg imageConfig
			json.Unmarshal(blob(man.Config), &cfg)
			if cfg.Architecture != m.Platform.Architecture || cfg.Config.Labels["io.cloudnativepg.image.base.pgmajor"] != itoa(im.Major) ||
				cfg.Config.Labels["org.opencontainers.image.version"] != model.PgLease.Version() || cfg.Created != built.UTC().Format(time.RFC3339) {
				t.Errorf("%s %s: config %+v", im.Dir, m.Platform.Architecture, cfg)
			}
			if len(man.Layers) != 1 {
				t.Fatalf("%d layers", len(man.Layers))
			}
			blob(man.Layers[0])
		}
		sort.Strings(platforms)
		if strings.Join(platforms, " ") != "linux/amd64 linux/arm64" {
			t.Errorf("%s: platforms %v", im.Dir, platforms)
		}
	}
	_, raw, _, err := layerOf(model.PgLease, render.Files{"pg_lease.control": []byte("x")}, []byte("l"), built)
	if err != nil || !bytes.Contains(raw, []byte("share/extension/pg_lease.control")) || !bytes.Contains(raw, []byte("licenses/pg_lease/LICENSE")) {
		t.Errorf("layer: %v", err)
	}
}

// TestImagesAreReproducible builds twice with one time: the same bytes;
// another time gives other bytes.
func TestImagesAreReproducible(t *testing.T) {
	when := model.Packages.Released()
	a, _ := images(t, when)
	b, _ := images(t, when)
	c, _ := images(t, when.Add(time.Hour))
	same := func(x, y render.Files) bool {
		if len(x) != len(y) {
			return false
		}
		for n := range x {
			if !bytes.Equal(x[n], y[n]) {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("two builds at one time differ")
	}
	if same(a, c) {
		t.Error("the build time does not reach the images")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestSkopeoReadsTheLayouts has skopeo, the tool the pipeline pushes
// with, read each layout for both platforms and copy it with all its
// platforms, keeping every digest.
func TestSkopeoReadsTheLayouts(t *testing.T) {
	testenv.Tools(t, "skopeo")
	files, imgs := images(t, model.Packages.Released())
	dir := t.TempDir()
	if err := render.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	for _, im := range imgs {
		src := "oci:" + filepath.Join(dir, im.Dir) + ":" + im.Tag
		for _, arch := range model.MachineArches {
			out, err := exec.Command("skopeo", "inspect", "--override-os", "linux", "--override-arch", arch, src).CombinedOutput()
			var got struct {
				Architecture string
				Labels       map[string]string
				Layers       []string
			}
			if err != nil || json.Unmarshal(out, &got) != nil || got.Architecture != arch || len(got.Layers) != 1 ||
				got.Labels["io.cloudnativepg.image.base.os"] != model.CNPG.OS {
				t.Errorf("skopeo inspect %s (%s): %v\n%s", src, arch, err, out)
			}
		}
		copied := filepath.Join(t.TempDir(), "copy")
		if out, err := exec.Command("skopeo", "copy", "--all", "--preserve-digests", src, "oci:"+copied+":"+im.Tag).CombinedOutput(); err != nil {
			t.Fatalf("skopeo copy --all %s: %v\n%s", src, err, out)
		}
		orig := files[path.Join(im.Dir, "index.json")]
		b, err := os.ReadFile(filepath.Join(copied, "index.json"))
		var top indexJSON
		if err != nil || json.Unmarshal(b, &top) != nil || len(top.Manifests) != 1 || !bytes.Contains(orig, []byte(strings.TrimPrefix(top.Manifests[0].Digest, "sha256:"))) {
			t.Errorf("skopeo's copy of %s has another index: %s", im.Dir, b)
		}
	}
}
