package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/testenv"
)

func TestEveryMajorIsPinned(t *testing.T) {
	for _, arch := range model.MachineArches {
		for _, m := range model.PgLease.Majors {
			s, err := ServerFor(m, arch)
			if arch == "arm64" && m == 14 {
				// neither the npm registry nor Debian has an arm64 build of 14
				if !errors.Is(err, ErrNoBuild) || !strings.Contains(err.Error(), "--image") {
					t.Errorf("PostgreSQL 14 on arm64: err = %v, want ErrNoBuild saying how to supply an image", err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if !s.FromNPM() {
				// no npm build: Debian's package, pinned
				d, ok := debianShips[m]
				if !ok || d.Version == "" || !strings.HasPrefix(s.Release(), strconv.Itoa(m)) || s.Arch != arch ||
					!strings.Contains(s.Origin(), d.Version) {
					t.Errorf("PostgreSQL %d for %s has no npm build and no pinned Debian package: %+v %+v", m, arch, s, d)
				}
				continue
			}
			if !strings.HasPrefix(s.Version, s.Release()+".") || !strings.HasPrefix(s.Release(), strconv.Itoa(m)+".") {
				t.Errorf("PostgreSQL %d for %s pinned to %s", m, arch, s.Version)
			}
			if !strings.HasPrefix(s.Integrity, "sha512-") || s.Package() == "" || s.Arch != arch {
				t.Errorf("PostgreSQL %d for %s: %+v", m, arch, s)
			}
		}
	}
	if _, err := ServerFor(17, "riscv64"); err == nil || errors.Is(err, ErrNoBuild) {
		t.Errorf("an unknown architecture: err = %v", err)
	}
}

func TestRefKeepsArchitecturesApart(t *testing.T) {
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	if got, want := Ref("pglease/el9", 17, runtime.GOARCH), "pglease/el9:17"; got != want {
		t.Errorf("this machine's architecture: %s, want %s", got, want)
	}
	if got, want := Tag(16, other), "pglease/postgres:16-"+other; got != want {
		t.Errorf("the other architecture: %s, want %s", got, want)
	}
}

func TestCheckEmulation(t *testing.T) {
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	handler := "qemu-" + model.ELArch(other)
	dir := t.TempDir()
	if err := checkEmulation(dir, runtime.GOARCH); err != nil {
		t.Errorf("this machine's own architecture needs no handler: %v", err)
	}
	for _, c := range []struct{ file, want string }{
		{"", "apt-get install qemu-user-static"},
		{"disabled\ninterpreter /usr/libexec/qemu-binfmt/x\nflags: PF\n", "is disabled"},
		{"enabled\ninterpreter /usr/libexec/qemu-binfmt/x\nflags: P\n", "lacks the F flag"},
		{"enabled\ninterpreter /usr/libexec/qemu-binfmt/x\nflags: PF\n", ""},
	} {
		if c.file != "" {
			os.WriteFile(filepath.Join(dir, handler), []byte(c.file), 0o644)
		}
		err := checkEmulation(dir, other)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("handler %q: err = %v, want %q", c.file, err, c.want)
		}
	}
}

func TestVerify(t *testing.T) {
	f := filepath.Join(t.TempDir(), "x.tgz")
	os.WriteFile(f, []byte("server build"), 0o644)
	sum := sha512.Sum512([]byte("server build"))
	good := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	if err := verify(f, good); err != nil {
		t.Errorf("matching file: %v", err)
	}
	os.WriteFile(f, []byte("server build, tampered"), 0o644)
	if err := verify(f, good); err == nil || !strings.Contains(err.Error(), "integrity mismatch") {
		t.Errorf("tampered file: err = %v", err)
	}
	if err := verify(f, "sha1-abc"); err == nil {
		t.Error("a sha1 pin was accepted")
	}
}

// fakeBuild writes a small tarball shaped like the npm package.
func fakeBuild(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name string, mode int64, body string) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	add("package/native/bin/postgres", 0o755, "server")
	add("package/native/lib/libpq.so.5.17", 0o755, "libpq")
	add("package/native/lib/libpq.a", 0o644, "static")
	add("package/native/lib/postgresql/plpgsql.so", 0o755, "plpgsql")
	add("package/native/lib/postgresql/pgxs/src/test/regress/pg_regress", 0o755, "not elf")
	add("package/native/share/postgresql/extension/plpgsql.control", 0o644, "control")
	add("package/native/pg-symlinks.json", 0o644, `[{"source":"native/lib/libpq.so.5.17","target":"native/lib/libpq.so.5"}]`)
	add("package/package.json", 0o644, "{}")
	tw.Close()
	zw.Close()
	f := filepath.Join(t.TempDir(), "build.tgz")
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestContextUsesTheOfficialLayout(t *testing.T) {
	nodes, err := serverTree(fakeBuild(t), layout.Debian(16), psqlMajor)
	if err != nil {
		t.Fatal(err)
	}
	b, err := buildContext([]byte("FROM base\n"), nodes)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeSymlink {
			got[h.Name] = "-> " + h.Linkname
		} else {
			body, _ := io.ReadAll(tr)
			got[h.Name] = string(body)
		}
	}
	want := map[string]string{
		"Dockerfile": "FROM base\n",
		"rootfs/usr/lib/postgresql/16/bin/postgres":                         "server",
		"rootfs/usr/lib/postgresql/16/lib/libpq.so.5.17":                    "libpq",
		"rootfs/usr/lib/postgresql/16/lib/libpq.so.5":                       "-> libpq.so.5.17",
		"rootfs/usr/lib/postgresql/16/lib/postgresql/plpgsql.so":            "plpgsql",
		"rootfs/usr/lib/postgresql/16/lib/pgxs/src/test/regress/pg_regress": "not elf",
		"rootfs/usr/share/postgresql/16/extension/plpgsql.control":          "control",
		"rootfs/usr/lib/postgresql/16/share/postgresql":                     "-> /usr/share/postgresql/16",
		"rootfs/usr/lib/postgresql/16/bin/psql":                             "-> /usr/lib/postgresql/15/bin/psql",
	}
	for name, body := range want {
		if got[name] != body {
			t.Errorf("%s = %q, want %q", name, got[name], body)
		}
	}
	if len(got) != len(want) {
		t.Errorf("context has %d entries, want %d: %v", len(got), len(want), got)
	}
}

// TestSecondBuildDoesNothing needs the images make images builds.
func TestSecondBuildDoesNothing(t *testing.T) {
	testenv.Docker(t)
	p, err := docker.Connect()
	if err != nil {
		t.Fatal(err)
	}
	before, ok, err := docker.Image(p.Client, Tag(17, runtime.GOARCH))
	if err != nil || !ok {
		t.Fatalf("%s missing (%v): run make images first", Tag(17, runtime.GOARCH), err)
	}
	var out bytes.Buffer
	if err := Build(t.Context(), p.Client, Options{Majors: []int{17}, Progress: &out}); err != nil {
		t.Fatal(err)
	}
	after, _, err := docker.Image(p.Client, Tag(17, runtime.GOARCH))
	if err != nil {
		t.Fatal(err)
	}
	if after.ID != before.ID || !strings.Contains(out.String(), "pglease/postgres:17 is up to date") || strings.Contains(out.String(), "download") {
		t.Errorf("a second build changed something: image %s -> %s\n%s", before.ID, after.ID, out.String())
	}
}

// TestDebianShipsTheseMajors asks each Debian release the images take a
// server from (with this machine's apt, in a private state directory) for
// its postgresql-N: each has one, of that major. A suite's majors are
// asked of one apt state, with the suite's pocket if one of them has one
// (experimental, NotAutomatic, offers nothing unasked: sid's 18 is still
// sid's), so that sid's indexes are read once per architecture.
func TestDebianShipsTheseMajors(t *testing.T) {
	testenv.Tools(t, "apt-get", "apt-cache")
	pocket := map[string]string{}
	for _, src := range debianShips {
		if src.Pocket != "" {
			pocket[src.Suite] = src.Pocket
		}
	}
	for _, arch := range model.MachineArches {
		o := Options{CacheDir: t.TempDir(), Mirror: DefaultMirror, Arch: arch}
		for major, src := range debianShips {
			asked := src
			asked.Pocket = pocket[src.Suite]
			v, err := debianVersion(context.Background(), o, asked, model.DebServerPackage(major))
			if err != nil {
				t.Fatal(err)
			}
			// a release (15.20-0+deb12u1) or a candidate of one (19~rc1-1)
			if !strings.HasPrefix(v, fmt.Sprintf("%d.", major)) && !strings.HasPrefix(v, fmt.Sprintf("%d~", major)) {
				t.Errorf("%s offers postgresql-%d for %s at %q", src, major, arch, v)
			}
			if src.Version != "" && v != src.Version {
				t.Errorf("%s: postgresql-%d is pinned to %s, apt found %s", src, major, src.Version, v)
			}
			t.Logf("%s %s: postgresql-%d %s", src, arch, major, v)
		}
	}
}
