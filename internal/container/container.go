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
	"github.com/pglease/pglease-gen/internal/runner"
	"github.com/pglease/pglease-gen/internal/suite"
)

// Label marks every container the runner starts, so leftovers can be found:
// docker ps -a --filter label=org.pglease.test
const Label = "org.pglease.test"

const (
	workDir = "/tmp/pglease" // suites, data directory, socket and results
	dbUser  = pgserver.BootstrapUser
)

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
	Install runner.Installer              // default: copy the rendered files
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
		if repo == images.Repository || repo == images.EL9Repository || repo == images.DebianRepository {
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
		o.Install = runner.CopyFiles(o.Ext, o.Src)
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
	suites, err := runner.SuitesArchive(o.Src)
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
	out, err := runner.Run(ctx, target{root: root, pg: pg, l: l}, runner.Options{
		Tests: tests, Suites: suites, Install: o.Install, Keep: o.Keep, Stage: stage,
		Results: resultsDir(o.Results, major),
	})
	r.Server, r.Result = out.Server, out.Result
	if err != nil && ctx.Err() != nil && parent.Err() == nil {
		err = fmt.Errorf("timed out after %s: %w", o.Timeout, err)
	}
	r.Err = err
	return r
}

func resultsDir(results string, major int) string {
	if results == "" {
		return ""
	}
	return filepath.Join(results, key(major))
}

// target is a running container as a runner.Target.
type target struct {
	root, pg Exec
	l        layout.Layout
}

func (t target) Layout() layout.Layout  { return t.l }
func (t target) Root() suite.Executor   { return t.root }
func (t target) Server() suite.Executor { return t.pg }
func (t target) User() string           { return dbUser }
func (t target) WorkDir() string        { return workDir }
func (t target) Own(ctx context.Context, dir string) error {
	return runner.Must(ctx, t.root, "chown", "-R", dbUser+":", dir)
}
func (t target) Upload(ctx context.Context, dir string, archive []byte) error {
	return t.root.Upload(ctx, dir, archive)
}
func (t target) Download(ctx context.Context, src, dst string) error {
	return t.pg.Download(ctx, src, dst)
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
