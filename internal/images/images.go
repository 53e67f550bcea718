// Package images builds local stand-ins for the official postgres:N images
// and for the hosts of the install proofs, for machines that cannot pull:
// Debian root file systems made with debootstrap (bookworm, trixie, sid),
// imported once as bases, plus one layer per major and image family. Where
// Debian ships the major (15, 17, 18; 19 from experimental at a pinned
// version) the server is Debian's own package; otherwise (14, 16) a pinned
// PostgreSQL server build from the npm registry, laid out as in the
// official images. The EL9 stand-ins hold a postgresqlN-server RPM in
// PGDG's layout made from the pinned npm build (14-18), or for a major
// that has none (19) from Debian's binaries, on sid. Each image is labelled with a hash of its recipe; an image
// whose label matches is not built again.
package images

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"debug/elf"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
)

const (
	// Repository is where the local images go: pglease/postgres:17 stands in
	// for postgres:17.
	Repository = "pglease/postgres"
	baseRepo   = "pglease/postgres-base"
	// RecipeLabel carries the hash of the recipe an image was built from.
	RecipeLabel = "org.pglease.recipe"
	// DefaultMirror is the Debian mirror debootstrap uses unless
	// PGLEASE_DEBIAN_MIRROR names another.
	DefaultMirror = "http://deb.debian.org/debian"
	// baseVersion and layerVersion change whenever the steps that make the
	// base or a major's layer change in a way the hashed inputs do not show.
	baseVersion  = "2"
	layerVersion = "5" // 5: stand-in packages with sorted files, debs by architecture
)

// base is the recipe of the base root file system. The npm builds have no
// psql, so Debian's postgresql-client-15 provides it (pg_regress runs
// whatever psql is in --bindir), and its libpq5 serves the drivers. dnf and
// rpm are for the EL9 stand-ins, where packages are installed with dnf.
var base = baseRecipe{"bookworm", "minbase", []string{"postgresql-client-15", "libpq5", "dnf", "rpm"}, 999, ""}

// baseRecipe is what a base root file system is made from.
type baseRecipe struct {
	Suite    string
	Variant  string
	Packages []string
	UID      int // the postgres user, as in the official images
	// Arch is Go's name of the root file system's architecture; "" for
	// firstArch.
	Arch string `json:",omitempty"`
}

// firstArch is the architecture the local images were first built for. It
// is left out of recipe hashes and cache names, so that those stay as they
// were before there were others.
const firstArch = "amd64"

// forArch is the recipe for an architecture.
func (b baseRecipe) forArch(arch string) baseRecipe {
	b.Arch = ""
	if arch != firstArch {
		b.Arch = arch
	}
	return b
}

// arch is Go's name of the recipe's architecture.
func (b baseRecipe) arch() string { return cmp.Or(b.Arch, firstArch) }

// suiteBase is the base of the images that install a Debian release's own
// server package: that release's minbase; apt brings the rest.
func suiteBase(suite string) baseRecipe {
	if suite == base.Suite {
		return base
	}
	return baseRecipe{suite, "minbase", nil, base.UID, ""}
}

// psqlMajor is the major of the psql that base installs.
const psqlMajor = 15

// Options configure Build.
type Options struct {
	Majors   []int
	Arch     string // Go's name (amd64, arm64); default: this machine's
	CacheDir string // downloads and the debootstrap work dir; default: the user cache dir
	Mirror   string // Debian mirror; default DefaultMirror
	Progress io.Writer
	// DebBuild also builds DebianBuildRepository's image of each major
	// Debian ships (the source package's build dependencies installed)
	DebBuild bool
}

// Tag is the local image of a major for an architecture, e.g.
// pglease/postgres:17 (this machine's) or pglease/postgres:17-arm64.
func Tag(major int, arch string) string { return Ref(Repository, major, arch) }

// Ref is the image of a major for an architecture in a repository: the tag
// is the major for this machine's architecture and MAJOR-ARCH for another,
// so that both sit side by side on one daemon.
func Ref(repo string, major int, arch string) string {
	return repo + ":" + ArchTag(major, arch)
}

// ArchTag is Ref's tag.
func ArchTag(major int, arch string) string {
	if arch == "" || arch == runtime.GOARCH {
		return strconv.Itoa(major)
	}
	return fmt.Sprintf("%d-%s", major, arch)
}

// Local reports whether repo is one of the repositories of the local
// images, which this package builds (no registry has them).
func Local(repo string) bool {
	return repo == Repository || repo == EL9Repository || repo == DebianRepository || repo == DebianBuildRepository
}

// Build makes sure the local image of every major in o.Majors exists and
// matches its recipe, building what is missing or stale.
func Build(ctx context.Context, c *dc.Client, o Options) error {
	if o.CacheDir == "" {
		dir, err := DefaultCacheDir()
		if err != nil {
			return err
		}
		o.CacheDir = dir
	}
	if o.Mirror == "" {
		o.Mirror = DefaultMirror
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if err := CheckEmulation(o.Arch); err != nil {
		return err
	}
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(o.Progress, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	baseRef, err := ensureBase(ctx, c, o, base.forArch(o.Arch), say)
	if err != nil {
		return err
	}
	for _, major := range o.Majors {
		if err := ensureMajor(ctx, c, o, baseRef, major, say); err != nil {
			return err
		}
	}
	return nil
}

func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// ensureBase imports the Debian root file system when no image of the
// current base recipe exists.
func ensureBase(ctx context.Context, c *dc.Client, o Options, base baseRecipe, say func(string, ...any)) (string, error) {
	ref := baseRepo + ":" + hashOf([]any{baseVersion, base})
	if base.Suite != "bookworm" || len(base.Packages) == 0 {
		ref = baseRepo + ":" + base.Suite + "-" + hashOf([]any{baseVersion, base})
	}
	if base.Arch != "" {
		ref = baseRepo + ":" + base.Suite + "-" + base.Arch + "-" + hashOf([]any{baseVersion, base})
	}
	if _, ok, err := docker.Image(c, ref); err != nil || ok {
		return ref, err
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("building the base image %s needs debootstrap as root: run `make images` as root", ref)
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", errors.New("debootstrap is not installed: apt-get install debootstrap (make deps does)")
	}
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(o.CacheDir, "rootfs-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	root := filepath.Join(work, "root")
	logPath := filepath.Join(o.CacheDir, "debootstrap-"+strings.TrimSuffix(base.Suite+"-"+base.Arch, "-")+".log")
	say("debootstrap %s for %s (%s) from %s; log in %s", base.Suite, base.arch(), strings.Join(base.Packages, ", "), o.Mirror, logPath)
	logf, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logf.Close()
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %w (see %s)", name, strings.Join(args, " "), err, logPath)
		}
		return nil
	}
	// for another architecture debootstrap's second stage runs in the
	// chroot under emulation (CheckEmulation made sure it can)
	args := []string{"--variant=" + base.Variant, "--arch=" + model.DebArch(base.arch())}
	if len(base.Packages) > 0 {
		args = append(args, "--include="+strings.Join(base.Packages, ","))
	}
	if err := run("debootstrap", append(args, base.Suite, root, o.Mirror)...); err != nil {
		return "", err
	}
	uid := fmt.Sprint(base.UID)
	steps := [][]string{
		{"chroot", root, "groupadd", "--system", "--gid", uid, "postgres"},
		{"chroot", root, "useradd", "--system", "--uid", uid, "--gid", "postgres", "--home-dir", "/var/lib/postgresql", "--shell", "/bin/bash", "postgres"},
		{"chroot", root, "install", "-d", "-o", "postgres", "-g", "postgres", "-m", "2775", "/var/lib/postgresql", "/var/run/postgresql"},
		{"chroot", root, "apt-get", "clean"},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return "", err
		}
	}
	for _, junk := range []string{"var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale"} {
		os.RemoveAll(filepath.Join(root, junk))
	}
	say("importing %s", ref)
	if err := run("tar", "--numeric-owner", "-C", root, "-cf", filepath.Join(work, rootfsTar), "."); err != nil {
		return "", err
	}
	if err := importRootfs(ctx, c, ref, base.arch(), work); err != nil {
		return "", fmt.Errorf("import %s: %w", ref, err)
	}
	return ref, nil
}

const rootfsTar = "rootfs.tar"

// importRootfs makes image ref of architecture arch from dir/rootfs.tar.
// It builds FROM scratch rather than importing, since the daemon records
// an imported image as its own architecture whatever the files are; a
// build for a platform records that platform.
func importRootfs(ctx context.Context, c *dc.Client, ref, arch, dir string) error {
	st, err := os.Stat(filepath.Join(dir, rootfsTar))
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		tw := tar.NewWriter(pw)
		df := []byte("FROM scratch\nADD " + rootfsTar + " /\nCMD [\"bash\"]\n")
		err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), ModTime: time.Unix(0, 0)})
		if err == nil {
			_, err = tw.Write(df)
		}
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: rootfsTar, Mode: 0o644, Size: st.Size(), ModTime: time.Unix(0, 0)})
		}
		if err == nil {
			var f *os.File
			if f, err = os.Open(filepath.Join(dir, rootfsTar)); err == nil {
				_, err = io.Copy(tw, f)
				f.Close()
			}
		}
		if err == nil {
			err = tw.Close()
		}
		wrote <- err
		pw.CloseWithError(err)
	}()
	var out bytes.Buffer
	err = c.BuildImage(dc.BuildImageOptions{
		Name: ref, InputStream: pr, OutputStream: &out, Platform: Platform(arch), Context: ctx,
		NetworkMode: "none", RmTmpContainer: true, ForceRmTmpContainer: true,
	})
	pr.CloseWithError(err) // unblocks the writer if docker stopped reading
	werr := <-wrote
	if err != nil {
		if werr != nil && !errors.Is(werr, err) {
			// the writer failed first: that is the cause
			return fmt.Errorf("write the build context: %w (docker: %v)", werr, err)
		}
		return fmt.Errorf("%w\n%s", err, out.String())
	}
	if werr != nil {
		return fmt.Errorf("write the build context: %w", werr)
	}
	return nil
}

var dockerfile = template.Must(template.New("Dockerfile").Parse(`FROM {{.Base}}
COPY rootfs/ /
ENV PG_MAJOR={{.Major}} PG_VERSION={{.Release}} PGDATA=/var/lib/postgresql/data \
    PATH={{.BinDir}}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL {{.Label}}="{{.Recipe}}" org.pglease.server="{{.Server}}"{{if .Debian}} org.pglease.debian="{{.Debian}}"{{end}}
{{if .Run}}RUN {{.Run}}
{{end}}STOPSIGNAL SIGINT
CMD ["bash"]
`))

// recipe is everything a major's image is made from; its hash is the label.
type recipe struct {
	LayerVersion string
	Base         string
	Server       Server
	Layout       layout.Layout
	PsqlMajor    int
	Family       string
	Arch         string `json:",omitempty"` // as in baseRecipe
	Debian       string `json:",omitempty"` // the Debian server package's version, when the image offers Debian's own
	Suite        string `json:",omitempty"` // and the Debian release it comes from
	Pocket       string `json:",omitempty"` // and the suite of that release the package comes from, if another
	// Offers are packages of that release the image's local repository
	// offers beside the server's, not installed: gpgv, which the deb
	// proof installs to check a suite where the minimal system has only
	// sqv (trixie and later); apt-utils, whose apt-ftparchive autopkgtest
	// installs in a testbed to index the packages under test; the server
	// of the major below, where upgradesTo names one
	Offers []string `json:",omitempty"`
	// Standins are the npm-only majors whose stand-in server debs the
	// repository also offers (standinsOn)
	Standins []Server `json:",omitempty"`
}

// env is what a family's nodes are made with.
type env struct {
	ctx     context.Context
	c       *dc.Client
	o       Options
	baseRef string
	tgz     string // the pinned npm server build
	say     func(string, ...any)
	// debs keeps the Debian packages downloaded for one major, which its
	// two Debian images share (key: release and package=version)
	debs map[string]map[string][]byte
}

func ensureMajor(ctx context.Context, c *dc.Client, o Options, baseRef string, major int, say func(string, ...any)) error {
	srv, err := ServerFor(major, o.Arch)
	if err != nil {
		return err
	}
	debs := map[string]map[string][]byte{}
	for _, fam := range families {
		if fam.onRequest && (!o.DebBuild || !DebianShips(major)) {
			continue
		}
		r := recipe{LayerVersion: layerVersion, Base: baseRef, Server: srv, Layout: fam.layout(major), PsqlMajor: psqlMajor, Family: fam.name, Arch: base.forArch(o.Arch).Arch}
		// the Debian images take Debian's own package where Debian ships
		// the major; the EL9 stand-in only when no npm build exists, and
		// then on a root file system of that release (its binaries need
		// its C library), with dnf and rpm
		if src, ok := debianShips[major]; ok && (fam.name != "el9" || !srv.FromNPM()) {
			r.Suite, r.Pocket = src.Suite, src.Pocket
			b := suiteBase(src.Suite)
			if fam.name == "el9" {
				b = el9Base(src.Suite)
			}
			if r.Base, err = ensureBase(ctx, c, o, b.forArch(o.Arch), say); err != nil {
				return err
			}
			if r.Debian, err = debianVersion(ctx, o, src, model.DebServerPackage(major)); err != nil {
				return err
			}
			if fam.name == "debian-build" {
				r.Offers = buildDepends(src, major, r.Debian)
			}
			if fam.name == "debian-apt" {
				r.Offers = []string{"gpgv", "apt-utils"}
				if from, ok := upgradesTo[major]; ok {
					r.Offers = append(r.Offers, model.DebServerPackage(from))
				}
				for _, m := range standinsOn[src.Suite] {
					s, err := ServerFor(m, o.Arch)
					if err != nil {
						return err
					}
					r.Standins = append(r.Standins, s)
				}
			}
		}
		run := ""
		if fam.run != nil {
			run = fam.run(r)
		}
		ref := Ref(fam.repo, major, o.Arch)
		what := "PostgreSQL " + srv.Release()
		if r.Debian != "" {
			what = "Debian's " + model.DebServerPackage(major) + " " + r.Debian
			if fam.name == "el9" {
				what = model.ServerPackage(major) + " from " + what
			}
		}
		err := ensureImage(c, ref, o.Arch, hashOf(r), what, say, func(label string) ([]byte, error) {
			tgz := ""
			if srv.FromNPM() {
				if tgz, err = fetch(ctx, o.CacheDir, srv, say); err != nil {
					return nil, err
				}
			}
			nodes, err := fam.nodes(env{ctx, c, o, r.Base, tgz, say, debs}, r)
			if err != nil {
				return nil, err
			}
			var df bytes.Buffer
			err = dockerfile.Execute(&df, map[string]any{
				"Base": r.Base, "Major": major, "Release": cmp.Or(r.Debian, srv.Release()), "BinDir": r.Layout.BinDir,
				"Label": RecipeLabel, "Recipe": label, "Server": srv.Origin(), "Debian": r.Debian, "Run": run,
			})
			if err != nil {
				return nil, err
			}
			return buildContext(df.Bytes(), nodes)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ensureImage builds ref from the context that makeContext returns unless
// ref exists with the recipe label want.
func ensureImage(c *dc.Client, ref, arch, want, what string, say func(string, ...any), makeContext func(label string) ([]byte, error)) error {
	old, ok, err := docker.Image(c, ref)
	if err != nil {
		return err
	}
	if ok && old.Config != nil && old.Config.Labels[RecipeLabel] == want && old.Architecture == arch {
		say("%s is up to date (%s, recipe %s)", ref, what, want)
		return nil
	}
	buildCtx, err := makeContext(want)
	if err != nil {
		return fmt.Errorf("prepare %s: %w", ref, err)
	}
	say("building %s (%s, %d MB context)", ref, what, len(buildCtx)>>20)
	var out bytes.Buffer
	err = c.BuildImage(dc.BuildImageOptions{
		Name: ref, InputStream: bytes.NewReader(buildCtx), OutputStream: &out,
		NetworkMode: "none", RmTmpContainer: true, ForceRmTmpContainer: true, Platform: Platform(arch),
	})
	if err != nil {
		return fmt.Errorf("build %s: %w\n%s", ref, err, out.String())
	}
	say("built %s", ref)
	if ok {
		// the stale image lost its tag; drop it unless a container uses it
		_ = c.RemoveImage(old.ID)
	}
	return nil
}

// fetch returns the path of the server tarball in the cache, downloading
// it when missing, and checks it against the pinned integrity every time.
func fetch(ctx context.Context, cacheDir string, s Server, say func(string, ...any)) (string, error) {
	dir := filepath.Join(cacheDir, "npm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, s.File())
	if err := verify(dst, s.Integrity); err == nil {
		return dst, nil
	}
	say("downloading %s", s.URL())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL(), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("download %s: %w", s.URL(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download %s: %s", s.URL(), resp.Status)
	}
	tmp, err := os.CreateTemp(dir, ".download-")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, resp.Body); err != nil {
		tmp.Close()
		return "", fmt.Errorf("download %s: %w", s.URL(), err)
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := verify(tmp.Name(), s.Integrity); err != nil {
		return "", fmt.Errorf("%s: %w", s.URL(), err)
	}
	return dst, os.Rename(tmp.Name(), dst)
}

// verify checks a file against an npm integrity string (sha512-<base64>).
func verify(file, integrity string) error {
	want, ok := strings.CutPrefix(integrity, "sha512-")
	if !ok {
		return fmt.Errorf("integrity %q is not sha512", integrity)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := base64.StdEncoding.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("integrity mismatch: got sha512-%s, pinned %s", got, integrity)
	}
	return nil
}

// node is a file or symbolic link of a server tree, by absolute path.
type node struct {
	Path string
	Mode int64
	Link string // target of a symbolic link
	Body []byte
}

// serverTree lays out the npm build's files for layout l: the server
// binaries, libraries, share directory and test drivers, plus the links
// that make that layout work.
//
// The build has no psql: l's psql is a link to the psql of Debian's
// postgresql-client-psqlFrom, which the image has or the package depends on.
func serverTree(tgz string, l layout.Layout, psqlFrom int) ([]node, error) {
	var links []struct{ Source, Target string }
	if err := eachEntry(tgz, func(h *tar.Header, body io.Reader) error {
		if h.Name != "package/native/pg-symlinks.json" {
			return nil
		}
		return json.NewDecoder(body).Decode(&links)
	}); err != nil {
		return nil, err
	}
	// where each part of the npm tree goes (first match wins)
	moves := []struct{ from, to string }{
		{"native/bin/", l.BinDir},
		{"native/lib/postgresql/pgxs/", l.PGXSDir},
		{"native/lib/", l.Prefix + "/lib"},
		{"native/share/postgresql/", l.ShareDir},
	}
	place := func(name string) (string, bool) {
		for _, m := range moves {
			if rest, ok := strings.CutPrefix(name, m.from); ok {
				return path.Join(m.to, rest), true
			}
		}
		return "", false
	}
	var nodes []node
	var runpaths []string
	err := eachEntry(tgz, func(h *tar.Header, body io.Reader) error {
		name, ok := strings.CutPrefix(h.Name, "package/")
		if !ok || h.Typeflag != tar.TypeReg || strings.HasSuffix(name, ".a") || strings.Contains(name, "/pkgconfig/") {
			return nil
		}
		dst, ok := place(name)
		if !ok {
			return nil
		}
		data, err := io.ReadAll(body)
		if err != nil {
			return err
		}
		if strings.HasPrefix(dst, path.Join(l.PGXSDir, "src/test")) {
			if runpaths, err = addRunpaths(runpaths, data); err != nil {
				return fmt.Errorf("%s: %w", h.Name, err)
			}
		}
		nodes = append(nodes, node{Path: dst, Mode: h.Mode & 0o7777, Body: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, ln := range links {
		if dst, ok := place(ln.Target); ok {
			nodes = append(nodes, node{Path: dst, Link: path.Base(ln.Source)})
		}
	}
	// The server finds its share directory next to its bin directory
	// (PostgreSQL relocates its compiled-in paths relative to the binary);
	// point that at the layout's share directory.
	nodes = append(nodes, node{Path: path.Join(l.Prefix, "share/postgresql"), Link: l.ShareDir})
	// The drivers look for their libpq (of the same release; isolationtester
	// needs its newer functions) in the build's compiled-in library
	// directory: make that a link to where the libraries are now.
	for _, rp := range runpaths {
		nodes = append(nodes, node{Path: rp, Link: l.Prefix + "/lib"})
	}
	if psql := layout.Debian(psqlFrom).Bin("psql"); l.Bin("psql") != psql {
		nodes = append(nodes, node{Path: l.Bin("psql"), Link: psql})
	}
	return nodes, nil
}

// buildContext builds a docker build context: the Dockerfile and rootfs/,
// which holds the nodes.
func buildContext(dockerfile []byte, nodes []node) ([]byte, error) {
	var t docker.Tar
	if err := t.File("Dockerfile", 0o644, dockerfile); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		name := path.Join("rootfs", n.Path)
		var err error
		if n.Link != "" {
			err = t.Symlink(name, n.Link)
		} else {
			err = t.File(name, n.Mode, n.Body)
		}
		if err != nil {
			return nil, err
		}
	}
	return t.Bytes()
}

// addRunpaths adds the absolute DT_RUNPATH entries of an ELF executable to
// seen, once each.
func addRunpaths(seen []string, exe []byte) ([]string, error) {
	f, err := elf.NewFile(bytes.NewReader(exe))
	if err != nil {
		return seen, nil // not an ELF file
	}
	rps, err := f.DynString(elf.DT_RUNPATH)
	if err != nil {
		return seen, err
	}
	for _, rp := range rps {
		for _, dir := range strings.Split(rp, ":") {
			if path.IsAbs(dir) && !slices.Contains(seen, dir) {
				seen = append(seen, dir)
			}
		}
	}
	return seen, nil
}

// eachEntry calls fn for every entry of a gzipped tar file.
func eachEntry(tgz string, fn func(*tar.Header, io.Reader) error) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", tgz, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tgz, err)
		}
		if err := fn(h, tr); err != nil {
			return err
		}
	}
}
