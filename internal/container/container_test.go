package container

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/artifact"
	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/junit"
	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/progress"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/runner"
	"github.com/pglease/pglease-gen/internal/suite"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// These tests run real containers from the local images, which `make test`
// builds first (make images). They skip under -short; otherwise, without a
// daemon or the images, they fail with what to run.

func pool(t *testing.T) *dockertest.Pool {
	t.Helper()
	testenv.Docker(t)
	p, err := docker.Connect()
	if err != nil {
		t.Fatalf("%v\n(make test starts the daemon and builds the images)", err)
	}
	return p
}

func needImages(t *testing.T, p *dockertest.Pool, majors ...int) {
	t.Helper()
	if err := CheckImages(p, images.Repository, majors, runtime.GOARCH); err != nil {
		t.Fatalf("%v\n(make images builds them)", err)
	}
}

// left reports whether the container a run started (by its name, unique
// per run, so that tests of the same major running at once do not see
// each other's) still exists, running or not.
func left(t *testing.T, p *dockertest.Pool, r MajorResult) bool {
	t.Helper()
	if r.Container == "" {
		t.Fatal("the result names no container")
	}
	cs, err := p.Client.ListContainers(dc.ListContainersOptions{All: true, Filters: map[string][]string{"label": {Label}, "name": {r.Container}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs) > 0
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func options(major int, src fs.FS, results string) Options {
	return Options{
		Ext: model.PgLease, Src: src, Majors: []int{major}, Image: images.Repository,
		Jobs: 1, Results: results, Timeout: 5 * time.Minute, Board: progress.New(&bytes.Buffer{}, false),
	}
}

func TestSuitesPassInContainer(t *testing.T) {
	t.Parallel()
	p := pool(t)
	needImages(t, p, 16)
	results := t.TempDir()
	// the newest version's suites and the update check: make matrix runs
	// every version's on every major through the same runner
	o := options(16, pglease.Files, results)
	o.NewestOnly = true
	rs, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if !r.Passed() {
		var b bytes.Buffer
		Report(&b, rs)
		t.Fatalf("suites failed on PostgreSQL 16:\n%s", b.String())
	}
	if !strings.HasPrefix(r.Server, "16.") {
		t.Errorf("server_version %q is not 16.x", r.Server)
	}
	passes, err := runner.Passes(model.PgLease, pglease.Files)
	if err != nil {
		t.Fatal(err)
	}
	n := runner.Count(passes[:1], runner.Updates(model.PgLease))
	all := n[suite.Regress] + n[suite.Isolation] + n[suite.Update]
	if p, f := r.Result.Counts(); p != all || f != 0 {
		t.Errorf("%d passed, %d failed; want every test of the newest version and every update check (%d) to pass", p, f, all)
	}
	for _, f := range []string{"regress/results/api.out", "isolation/results/rollback.out"} {
		if _, err := os.Stat(filepath.Join(results, "pg16", f)); err != nil {
			t.Errorf("results not copied back: %v", err)
		}
	}
	if left(t, p, r) {
		t.Errorf("container %s left behind", r.Container)
	}

	var b bytes.Buffer
	Report(&b, rs)
	if !strings.HasSuffix(b.String(), "1 passed, 0 failed, 0 skipped (PostgreSQL 16)\n") {
		t.Errorf("report does not end with the majors count:\n%s", b.String())
	}
	var x bytes.Buffer
	if err := junit.Write(&x, JUnit(rs)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(x.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit report is not XML: %v\n%s", err, x.String())
	}
	if doc.Tests != all || doc.Failures != 0 || len(doc.Suites) != 3 || doc.Suites[1].Name != "pg16.isolation" || doc.Suites[2].Name != "pg16.update" {
		t.Errorf("JUnit report: %d tests, %d failures, suites %+v", doc.Tests, doc.Failures, doc.Suites)
	}
}

// embedded is a copy of the embedded files that a test may change.
func embedded(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(pglease.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(pglease.Files, p)
		m[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// broken returns the embedded files with one line of an expected file
// changed, so that test must fail.
func broken(t *testing.T, file, old, new string) fstest.MapFS {
	t.Helper()
	m := embedded(t)
	s := string(m[file].Data)
	if !strings.Contains(s, old) {
		t.Fatalf("%s has no %q", file, old)
	}
	m[file].Data = []byte(strings.Replace(s, old, new, 1))
	return m
}

func TestBrokenExpectedFileFailsWithDiff(t *testing.T) {
	t.Parallel()
	p := pool(t)
	needImages(t, p, 14)
	src := broken(t, "isolation/expected/rollback.out", "epoch", "epoch-broken-on-purpose")
	// the broken spec and one regress test that passes, of the newest
	// version: the runner's own test shows a broken expected file failing
	// in every pass, and the matrix runs the whole suites
	testenv.OnlyTests(t, src, "regress/api", "isolation/rollback")
	o := options(14, src, t.TempDir())
	o.NewestOnly = true
	rs, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if r.Passed() || r.Err != nil {
		t.Fatalf("passed=%v err=%v; want a failed suite, not a setup error", r.Passed(), r.Err)
	}
	if _, f := r.Result.Count("isolation"); f != 1 {
		t.Errorf("%d isolation specs failed; want exactly rollback", f)
	}
	if _, f := r.Result.Count("regress"); f != 0 {
		t.Errorf("%d regress tests failed; want 0", f)
	}
	var b bytes.Buffer
	Report(&b, rs)
	out := b.String()
	for _, want := range []string{"=== pg14 isolation regression.diffs ===", "-step s1_acquire: SELECT acquired, epoch-broken-on-purpose FROM", "0 passed, 1 failed, 0 skipped (PostgreSQL 14)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	js := JUnit(rs)
	var failure string
	for _, s := range js {
		for _, c := range s.Cases {
			if c.Failure != "" && failure == "" {
				failure = s.Name + "/" + c.Name + ": " + c.Failure
			}
		}
	}
	if !strings.HasPrefix(failure, "pg14.isolation/rollback: diff ") || !strings.Contains(failure, "broken-on-purpose") {
		t.Errorf("JUnit failure does not carry rollback's diff: %q", failure)
	}
	if left(t, p, rs[0]) {
		t.Errorf("container %s left behind", rs[0].Container)
	}
}

func TestCancelRemovesContainer(t *testing.T) {
	t.Parallel()
	p := pool(t)
	needImages(t, p, 18)
	ctx, cancel := context.WithCancel(context.Background())
	o := options(18, pglease.Files, "")
	var log syncBuffer
	o.Board = progress.New(&log, false)
	// cancel as soon as the regress suite starts, like Ctrl-C would; the
	// watcher stops when Run returns, so a run that never gets there
	// fails the test instead of hanging it
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		for !strings.Contains(log.String(), "pg18: regress") {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		close(started)
		cancel()
	}()
	rs, err := Run(ctx, p, o)
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	default:
		t.Fatalf("the run ended before the regress suite started, so nothing was cancelled: %v\n%s", rs[0].Err, log.String())
	}
	if rs[0].Err == nil {
		t.Error("a cancelled run reported no error")
	}
	if left(t, p, rs[0]) {
		t.Errorf("container %s left behind after cancel", rs[0].Container)
	}
}

// TestWrongArchitectureUnderTheRightTag tags this machine's image of 17 as
// the other architecture's: CheckImages refuses it and says what to do.
func TestWrongArchitectureUnderTheRightTag(t *testing.T) {
	p := pool(t)
	needImages(t, p, 17)
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	repo := fmt.Sprintf("pglease-test/wrongarch-%d", os.Getpid())
	ref := images.Ref(repo, 17, other)
	if err := p.Client.TagImage(images.Tag(17, runtime.GOARCH), dc.TagImageOptions{Repo: repo, Tag: images.ArchTag(17, other)}); err != nil {
		t.Fatal(err)
	}
	defer p.Client.RemoveImage(ref)
	err := CheckImages(p, repo, []int{17}, other)
	want := fmt.Sprintf("%s is an image for %s, not %s: remove it (docker rmi %s)", ref, runtime.GOARCH, other, ref)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v; want %q", err, want)
	}
}

func TestMissingImageSaysHowToBuildIt(t *testing.T) {
	p := pool(t)
	// (a stand-in that is not built; a missing official image would be
	// pulled, and this machine must not reach a registry)
	err := CheckImages(p, images.Repository, []int{17, 99}, runtime.GOARCH)
	if err == nil || !strings.Contains(err.Error(), "pglease/postgres:99 is not built: run `pglease-gen images --pg 99`") || strings.Contains(err.Error(), ":17") {
		t.Errorf("err = %v; want it to name only the missing image and say how to build it", err)
	}
	err = CheckImages(p, images.Repository, []int{17}, runtime.GOARCH)
	if err != nil {
		t.Errorf("present image reported missing: %v", err)
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	err = CheckImages(p, images.EL9Repository, []int{99}, other)
	if want := "pglease/el9:99-" + other + " is not built: run `pglease-gen images --pg 99 --arch " + other + "`"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v; want %q", err, want)
	}
}

// TestAptRefusesABrokenDependency installs the deb for 17 on the Debian
// image that offers only PostgreSQL 16: apt refuses with its own message
// and the major fails.
func TestAptRefusesABrokenDependency(t *testing.T) {
	t.Parallel()
	p := pool(t)
	if err := CheckImages(p, images.DebianRepository, []int{16}, runtime.GOARCH); err != nil {
		t.Fatalf("%v\n(make images builds them)", err)
	}
	files, _, err := artifact.Build(context.Background(), artifact.Options{Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files,
		Majors: []int{16, 17}, Distros: proofDistros, Suffix: model.Packages.Suffixes[0], Time: model.Packages.Released()})
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	if err := render.Write(dist, files); err != nil {
		t.Fatal(err)
	}
	repo, err := runner.FindAptRepo(dist)
	if err != nil {
		t.Fatal(err)
	}
	o := options(16, pglease.Files, "")
	o.Image = images.DebianRepository
	// the image of 16, the package (and layout) of 17
	o.Layout = func(int) layout.Layout { return layout.Debian(17) }
	o.Install = runner.AptInstall(model.PgLease, repo, nil, "")
	rs, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Err == nil || !strings.Contains(rs[0].Err.Error(), "postgresql-17-pg-lease : Depends: postgresql-17 but it is not installable") {
		t.Errorf("err = %v; want apt's unmet dependency", rs[0].Err)
	}
}

// withTest returns the embedded files plus one regress test of
// testdata/DIR (NAME.sql, and NAME.out as its expected output when there
// is one).
func withTest(t *testing.T, dir, name string) fstest.MapFS {
	t.Helper()
	m := embedded(t)
	for from, to := range map[string]string{name + ".sql": "regress/sql/" + name + ".sql", name + ".out": "regress/expected/" + name + ".out"} {
		b, err := os.ReadFile(filepath.Join("testdata", dir, from))
		if err != nil {
			if os.IsNotExist(err) && strings.HasSuffix(from, ".out") {
				continue
			}
			t.Fatal(err)
		}
		m[to] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	return m
}

// TestPostgres19Changes runs testdata/pg19/pg19_changes.sql, what
// PostgreSQL 19 changed that an extension or its packages touch, beside
// the newest version's api test: on 19 it passes; on 18 that one test fails
// (it can still turn standard_conforming_strings off and has no location
// column), so the expected file shows 19's behaviour, not one every major
// shares. The update check, also run here, compares named catalog columns
// only, so 19's new ones do not enter it.
func TestPostgres19Changes(t *testing.T) {
	t.Parallel()
	p := pool(t)
	needImages(t, p, 18, 19)
	src := withTest(t, "pg19", "pg19_changes")
	// api and one spec pass on both (make test's matrix runs the newest
	// version's whole suites on 18 and every version's on 19)
	testenv.OnlyTests(t, src, "regress/pg19_changes", "regress/api", "isolation/rollback")
	for _, major := range []int{19, 18} {
		results := t.TempDir()
		o := options(major, src, results)
		o.NewestOnly = true
		rs, err := Run(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		r := rs[0]
		var b bytes.Buffer
		Report(&b, rs)
		if r.Err != nil {
			t.Fatalf("PostgreSQL %d: the suites could not run: %v", major, r.Err)
		}
		rp, rf := r.Result.Count(suite.Regress)
		switch {
		case major == 19 && !r.Passed():
			t.Errorf("PostgreSQL 19 (%s): %d regress failed:\n%s", r.Server, rf, b.String())
		case major == 18 && (rf != 1 || !strings.Contains(r.Result.Diffs[suite.Regress], "pg19_changes")):
			t.Errorf("PostgreSQL 18: %d of %d regress failed; want exactly pg19_changes:\n%s", rf, rp+rf, b.String())
		}
		t.Logf("PostgreSQL %s: regress %d passed, %d failed", r.Server, rp, rf)
	}
}
