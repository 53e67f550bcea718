// Package container runs the extension's regress and isolation suites
// inside Docker containers, one per PostgreSQL major, in parallel: it starts
// a container from the major's image with no network, installs the
// extension (copying the rendered files into the server's extension
// directory, or with dnf or apt from a built repository), starts a
// throwaway server on a unix socket, runs pg_regress and
// pg_isolation_regress there for each version's pass and the update
// checks, copies the results back and removes the container.
package container

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
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
	Image   string // repository; the tag is the major (images.Ref)
	Arch    string // Go's name; default this machine's
	Jobs    int    // majors run at once; <1 means 1
	Keep    bool   // leave containers running for debugging
	Results string // results go to Results/pgN/{regress,isolation}
	Timeout time.Duration
	Layout  func(major int) layout.Layout // default layout.Debian
	Install runner.Installer              // default: copy the rendered files
	Board   *progress.Board
	// NewestOnly runs the newest version's suites only, not those of the
	// older versions and updates; the update checks run either way.
	NewestOnly bool
	// NoUpdateCheck skips the update check (pure SQL: the amd64 matrix
	// runs it; make arm64-ci skips it under emulation).
	NoUpdateCheck bool
	// Settings are server settings ("name=value") every server starts with.
	Settings []string
}

// MajorResult is the outcome for one major.
type MajorResult struct {
	Major     int
	Image     string
	Server    string // server_version as the server reports it
	Version   string // version()
	Machine   string // uname -m in the container
	Skipped   string // why the major did not run (no image of it exists for the architecture)
	Container string // name of the container (still running with Keep)
	Result    suite.Result
	// Planned are every check the run was to report: those without a
	// result in Result did not finish (the run was interrupted, timed
	// out or could not start).
	Planned []suite.Case
	Err     error // the suites could not run, or not to the end
	Took    time.Duration
}

// Unfinished are the planned checks that have no result.
func (m MajorResult) Unfinished() []suite.Case {
	seen := map[suite.Kind]map[string]bool{}
	for _, c := range m.Result.Cases {
		if seen[c.Kind] == nil {
			seen[c.Kind] = map[string]bool{}
		}
		seen[c.Kind][c.Name] = true
	}
	var out []suite.Case
	for _, c := range m.Planned {
		if !seen[c.Kind][c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// Interrupted reports whether the run was cut short by a cancel (a signal)
// or the caller's deadline, not by a failure of its own.
func (m MajorResult) Interrupted() bool {
	return errors.Is(m.Err, context.Canceled) || errors.Is(m.Err, context.DeadlineExceeded)
}

// Passed reports whether the suites ran and every test passed.
func (m MajorResult) Passed() bool { return m.Skipped == "" && m.Err == nil && m.Result.Passed() }

// Failed reports whether the major ran and failed, or could not run.
func (m MajorResult) Failed() bool { return m.Skipped == "" && !m.Passed() }

// Key is the major's short name in progress and reports, e.g. pg17.
func (m MajorResult) Key() string { return key(m.Major) }

func key(major int) string { return "pg" + strconv.Itoa(major) }

// CheckImages makes sure this machine can run arch's binaries and that the
// image of every major is present and of that architecture, pulling an
// image that is missing unless it is a local stand-in (for another
// architecture it pulls that platform's image of REPO:MAJOR and tags it
// MAJOR-ARCH), and says how to get each one that is still missing.
func CheckImages(pool *dockertest.Pool, repo string, majors []int, arch string) error {
	arch = cmp.Or(arch, runtime.GOARCH)
	if err := images.CheckEmulation(arch); err != nil {
		return err
	}
	var missing []string
	for _, major := range majors {
		ref := images.Ref(repo, major, arch)
		img, ok, err := docker.Image(pool.Client, ref)
		if err != nil {
			return err
		}
		if ok {
			if img.Architecture != arch {
				missing = append(missing, fmt.Sprintf("%s is an image for %s, not %s: remove it (docker rmi %s) and build or pull the %s one%s",
					ref, img.Architecture, arch, ref, arch, buildHint(repo, major, arch)))
			}
			continue
		}
		if images.Local(repo) {
			missing = append(missing, fmt.Sprintf("%s is not built:%s", ref, buildHint(repo, major, arch)))
			continue
		}
		err = pull(pool.Client, repo, major, arch)
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

// pull fetches repo:major for arch and leaves it as images.Ref(repo, major,
// arch). For another architecture than this machine's the registry's tag
// is the major, which the pull moves onto the other architecture's image:
// the tag is put back where it was (or removed if it was not there), so
// this machine's image of the major stays under it.
func pull(c *dc.Client, repo string, major int, arch string) error {
	tag := strconv.Itoa(major)
	if arch == runtime.GOARCH {
		return c.PullImage(dc.PullImageOptions{Repository: repo, Tag: tag, Platform: images.Platform(arch)}, dc.AuthConfiguration{})
	}
	native := repo + ":" + tag
	before, had, err := docker.Image(c, native)
	if err != nil {
		return err
	}
	if err := c.PullImage(dc.PullImageOptions{Repository: repo, Tag: tag, Platform: images.Platform(arch)}, dc.AuthConfiguration{}); err != nil {
		return err
	}
	if err := c.TagImage(native, dc.TagImageOptions{Repo: repo, Tag: images.ArchTag(major, arch), Force: true}); err != nil {
		return err
	}
	if had {
		return c.TagImage(before.ID, dc.TagImageOptions{Repo: repo, Tag: tag, Force: true})
	}
	return c.RemoveImageExtended(native, dc.RemoveImageOptions{NoPrune: true})
}

// buildHint says how to build a local image; "" for other repositories.
func buildHint(repo string, major int, arch string) string {
	if !images.Local(repo) {
		return ""
	}
	if arch != runtime.GOARCH {
		return fmt.Sprintf(" run `pglease-gen images --pg %d --arch %s`", major, arch)
	}
	return fmt.Sprintf(" run `pglease-gen images --pg %d` (make images builds all majors)", major)
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
	o.Arch = cmp.Or(o.Arch, runtime.GOARCH)
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
	passes, err := runner.Passes(o.Ext, o.Src)
	if err != nil {
		return nil, err
	}
	if o.NewestOnly {
		passes = passes[:1]
	}
	updates := runner.Updates(o.Ext)
	if o.NoUpdateCheck {
		updates = nil
	}
	planned := runner.Planned(passes, updates)
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
					results[i] = MajorResult{Major: major, Image: images.Ref(o.Image, major, o.Arch), Planned: planned, Err: err}
					o.Board.Finish(key(major), "cancelled")
					continue
				}
				results[i] = runMajor(ctx, pool, o, major, passes, updates)
				results[i].Planned = planned
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

func runMajor(parent context.Context, pool *dockertest.Pool, o Options, major int, passes []runner.Pass, updates []runner.Update) (r MajorResult) {
	start := time.Now()
	r = MajorResult{Major: major, Image: images.Ref(o.Image, major, o.Arch)}
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
		Tag:        images.ArchTag(major, o.Arch),
		Platform:   images.Platform(o.Arch),
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
		Passes: passes, Updates: updates, Install: o.Install, Keep: o.Keep, Stage: stage, Settings: o.Settings,
		Results: resultsDir(o.Results, major),
	})
	r.Server, r.Version, r.Machine, r.Result = out.Server, out.Version, out.Machine, out.Result
	if want := model.ELArch(o.Arch); err == nil && r.Machine != want {
		// a run must not pass on another architecture than asked for
		err = fmt.Errorf("the container from %s runs on %s, not %s", r.Image, r.Machine, want)
	}
	switch {
	case err != nil && parent.Err() != nil:
		// the caller's cancel or deadline, whatever the step that met it
		// made of it: Interrupted must see it
		err = fmt.Errorf("interrupted: %w (%v)", parent.Err(), err)
	case err != nil && ctx.Err() != nil:
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
