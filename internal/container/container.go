// Package container runs the extension's regress and isolation suites
// inside Docker containers, one per PostgreSQL major, in parallel: it starts
// a container from the major's image with no network, copies the rendered
// extension into the server's extension directory, starts a throwaway
// server on a unix socket, runs pg_regress and pg_isolation_regress there,
// copies the results back and removes the container.
package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/progress"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/suite"
)

// Label marks every container the runner starts, so leftovers can be found:
// docker ps -a --filter label=org.pglease.test
const Label = "org.pglease.test"

const (
	workDir = "/tmp/pglease" // suites, data directory, socket and results
	dbUser  = "postgres"
	port    = 5432
)

// Installer puts the extension into a running container whose server has
// the given layout, before the server starts. The default copies the
// rendered control file and install script into the extension directory.
// A non-nil check runs after the suites (e.g. uninstall, and check that
// nothing is left); its error fails the major.
type Installer func(ctx context.Context, root Exec, l layout.Layout, stage func(string)) (check func(context.Context) error, err error)

// Options configure Run.
type Options struct {
	Ext     model.Extension
	Src     fs.FS // templates and suites
	Majors  []int
	Image   string // repository; the tag is the major
	Jobs    int    // majors run at once; <1 means 1
	Keep    bool   // leave containers running for debugging
	Results string // results go to Results/pgN/{regress,isolation}
	Timeout time.Duration
	Layout  func(major int) layout.Layout // default layout.Debian
	Install Installer                     // default: copy the rendered files
	Board   *progress.Board
}

// MajorResult is the outcome for one major.
type MajorResult struct {
	Major     int
	Image     string
	Server    string // server_version as the server reports it
	Container string // name of the container (still running with Keep)
	Result    suite.Result
	Err       error // the suites could not run
	Took      time.Duration
}

// Passed reports whether the suites ran and every test passed.
func (m MajorResult) Passed() bool { return m.Err == nil && m.Result.Passed() }

// Key is the major's short name in progress and reports, e.g. pg17.
func (m MajorResult) Key() string { return key(m.Major) }

func key(major int) string { return "pg" + strconv.Itoa(major) }

// Ref is the image reference of a major.
func Ref(repo string, major int) string { return fmt.Sprintf("%s:%d", repo, major) }

// CheckImages makes sure the image of every major is present, pulling an
// image that is missing unless it is a local stand-in, and says how to get
// each one that is still missing.
func CheckImages(pool *dockertest.Pool, repo string, majors []int) error {
	var missing []string
	for _, major := range majors {
		ref := Ref(repo, major)
		_, ok, err := docker.Image(pool.Client, ref)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if repo == images.Repository || repo == images.EL9Repository {
			missing = append(missing, fmt.Sprintf("%s is not built: run `pglease-gen images --pg %d` (make images builds all majors)", ref, major))
			continue
		}
		err = pool.Client.PullImage(dc.PullImageOptions{Repository: repo, Tag: strconv.Itoa(major)}, dc.AuthConfiguration{})
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s is not on this machine and pulling it failed (%v); "+
				"without registry access build local stand-ins with `make images` and pass --image %s", ref, err, images.Repository))
		}
	}
	if len(missing) > 0 {
		return errors.New(strings.Join(missing, "\n"))
	}
	return nil
}

// Run runs the suites for every major, o.Jobs at a time. Failures of one
// major (including setup failures) are in its result; Run's error is for
// problems that stop everything.
func Run(ctx context.Context, pool *dockertest.Pool, o Options) ([]MajorResult, error) {
	if o.Layout == nil {
		o.Layout = layout.Debian
	}
	if o.Install == nil {
		o.Install = CopyFiles(o.Ext, o.Src)
	}
	if o.Jobs < 1 {
		o.Jobs = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Minute
	}
	if o.Board == nil {
		o.Board = progress.New(io.Discard, false)
	}
	for _, m := range o.Majors {
		if !o.Ext.Supports(m) {
			return nil, fmt.Errorf("unsupported PostgreSQL major %d: use one of %s", m, o.Ext.MajorList())
		}
	}
	tests, err := suite.AllTests(o.Src)
	if err != nil {
		return nil, err
	}
	suites, err := suiteArchive(o.Src)
	if err != nil {
		return nil, err
	}
	results := make([]MajorResult, len(o.Majors))
	for _, major := range o.Majors {
		o.Board.Set(key(major), "queued")
	}
	// o.Jobs workers take the majors in order
	next := make(chan int, len(o.Majors))
	for i := range o.Majors {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(o.Jobs, len(o.Majors)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				major := o.Majors[i]
				if err := ctx.Err(); err != nil {
					results[i] = MajorResult{Major: major, Image: Ref(o.Image, major), Err: err}
					o.Board.Finish(key(major), "cancelled")
					continue
				}
				results[i] = runMajor(ctx, pool, o, major, tests, suites)
				o.Board.Finish(key(major), outcome(results[i]))
			}
		}()
	}
	wg.Wait()
	return results, nil
}

func outcome(r MajorResult) string {
	if r.Err != nil {
		return "error: " + firstLine(r.Err.Error())
	}
	p, f := r.Result.Counts()
	word := "passed"
	if !r.Passed() {
		word = "FAILED"
	}
	return fmt.Sprintf("%s: %d passed, %d failed (PostgreSQL %s)", word, p, f, r.Server)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func runMajor(parent context.Context, pool *dockertest.Pool, o Options, major int, tests map[suite.Kind][]string, suites []byte) (r MajorResult) {
	start := time.Now()
	r = MajorResult{Major: major, Image: Ref(o.Image, major)}
	defer func() { r.Took = time.Since(start) }()
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	stage := func(s string) { o.Board.Set(key(major), s) }
	l := o.Layout(major)

	stage("starting container from " + r.Image)
	name, err := uniqueName(major)
	if err != nil {
		r.Err = err
		return r
	}
	r.Container = name
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: o.Image,
		Tag:        strconv.Itoa(major),
		Name:       name,
		Entrypoint: []string{"sleep", "infinity"},
		Labels:     map[string]string{Label: "1"},
	}, func(hc *dc.HostConfig) {
		hc.NetworkMode = "none"
		hc.PublishAllPorts = false
		hc.Init = true
	})
	defer func() {
		if o.Keep && res != nil {
			o.Board.Printf("%s: container %s kept; enter it with: docker exec -it -u %s %s psql -h %s -U %s postgres   (remove it with: docker rm -f %s)",
				key(major), name, dbUser, name, workDir, dbUser, name)
			return
		}
		remove(pool, name)
	}()
	if err != nil {
		r.Err = fmt.Errorf("start a container from %s: %w", r.Image, err)
		return r
	}
	root := Exec{Client: pool.Client, ID: res.Container.ID}
	pg := root
	pg.User = dbUser

	stage("installing " + o.Ext.Name)
	check, err := o.Install(ctx, root, l, stage)
	if err != nil {
		r.Err = fmt.Errorf("install %s: %w", o.Ext.Name, err)
		return r
	}
	if err := root.Must(ctx, "mkdir", "-p", workDir); err != nil {
		r.Err = err
		return r
	}
	if err := root.Upload(ctx, workDir, suites); err != nil {
		r.Err = err
		return r
	}
	if err := root.Must(ctx, "chown", "-R", dbUser+":", workDir); err != nil {
		r.Err = err
		return r
	}

	stage("initdb")
	data := path.Join(workDir, "data")
	if err := pg.Must(ctx, append([]string{l.Bin("initdb")}, pgserver.InitdbArgs(data, dbUser)...)...); err != nil {
		r.Err = err
		return r
	}
	stage("starting server")
	logFile := path.Join(workDir, "server.log")
	if err := pg.Must(ctx, append([]string{l.Bin("pg_ctl")}, pgserver.PgCtlStartArgs(data, workDir, port, logFile)...)...); err != nil {
		log, _ := pg.ReadFile(ctx, logFile)
		r.Err = fmt.Errorf("%w\nserver log:\n%s", err, log)
		return r
	}
	out, err := pg.Output(ctx, l.Bin("psql"), "-X", "-At", "-h", workDir, "-p", strconv.Itoa(port), "-U", dbUser, "-d", "postgres", "-c", "SHOW server_version")
	if err != nil {
		r.Err = fmt.Errorf("ask the server its version: %w", err)
		return r
	}
	r.Server = strings.TrimSpace(string(out))

	results := path.Join(workDir, "results")
	if err := pg.Must(ctx, "mkdir", "-p", results); err != nil {
		r.Err = err
		return r
	}
	res2, err := suite.Run(ctx, pg, suite.Options{
		PgRegress:          l.PgRegress(),
		PgIsolationRegress: l.PgIsolationRegress(),
		BinDir:             l.BinDir,
		InputDir:           workDir,
		OutputDir:          results,
		Host:               workDir,
		Port:               port,
		User:               dbUser,
		Tests:              tests,
		Starting:           func(k suite.Kind) { stage(fmt.Sprintf("%s (%d tests)", k, len(tests[k]))) },
	})
	r.Result = res2
	if err != nil {
		if ctx.Err() != nil && parent.Err() == nil {
			err = fmt.Errorf("timed out after %s: %w", o.Timeout, err)
		}
		r.Err = err
		return r
	}
	if o.Results != "" {
		stage("copying results")
		dst := filepath.Join(o.Results, key(major))
		if err := pg.Download(ctx, results, dst); err != nil {
			r.Err = err
			return r
		}
	}
	if check != nil {
		if err := check(ctx); err != nil {
			r.Err = err
		}
	}
	return r
}

// remove force-removes a container and its anonymous volumes; it runs on
// its own context so that it also happens after a cancel.
func remove(pool *dockertest.Pool, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: name, Force: true, RemoveVolumes: true, Context: ctx})
	var nsc *dc.NoSuchContainer
	if err != nil && !errors.As(err, &nsc) {
		fmt.Fprintf(os.Stderr, "pglease-gen: remove container %s: %v (remove it with: docker rm -f %s)\n", name, err, name)
	}
}

func uniqueName(major int) (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return fmt.Sprintf("pglease-test-pg%d-%s", major, hex.EncodeToString(b)), nil
}

// CopyFiles is the default Installer: it renders the extension and copies
// its control file and install script into the extension directory.
func CopyFiles(ext model.Extension, src fs.FS) Installer {
	return func(ctx context.Context, root Exec, l layout.Layout, _ func(string)) (func(context.Context) error, error) {
		files, err := render.Extension(ext, src)
		if err != nil {
			return nil, err
		}
		var t docker.Tar
		for _, n := range []string{ext.ControlFile(), ext.ScriptFile()} {
			if err := t.File(n, 0o644, files[n]); err != nil {
				return nil, err
			}
		}
		archive, err := t.Bytes()
		if err != nil {
			return nil, err
		}
		if err := root.Must(ctx, "test", "-d", l.ExtensionDir()); err != nil {
			return nil, fmt.Errorf("the image has no %s: is it a %s-layout PostgreSQL %d image? (%w)", l.ExtensionDir(), l.Name, l.Major, err)
		}
		return nil, root.Upload(ctx, l.ExtensionDir(), archive)
	}
}

// suiteArchive is a tar of regress/ and isolation/ from src.
func suiteArchive(src fs.FS) ([]byte, error) {
	var t docker.Tar
	for _, k := range suite.Kinds {
		err := fs.WalkDir(src, string(k), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return t.Dir(p, 0o755)
			}
			b, err := fs.ReadFile(src, p)
			if err != nil {
				return err
			}
			return t.File(p, 0o644, b)
		})
		if err != nil {
			return nil, fmt.Errorf("pack the suites: %w", err)
		}
	}
	return t.Bytes()
}
