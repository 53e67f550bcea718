// Package runner runs the extension's regress and isolation suites on one
// target by one procedure, wherever PostgreSQL is: install the extension,
// initdb, start a server on a unix socket, run both suites in each
// version's pass, check every update path against a fresh install, copy
// the results out, check, stop. A Target is only how to run commands there,
// how to copy files in and out, and where PostgreSQL lives: this machine
// (Host) and a container (package container) are two.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/suite"
)

// Target is a place where PostgreSQL runs for the suites.
type Target interface {
	// Layout says where the major's programs, extension directory and
	// drivers are.
	Layout() layout.Layout
	// Root runs commands as the administrator (installers); Server as the
	// server's operating system user (initdb, pg_ctl, the drivers).
	Root() suite.Executor
	Server() suite.Executor
	// User is the server's bootstrap superuser.
	User() string
	// WorkDir is a directory of the target's own for the suites, the data
	// directory, the socket and the results.
	WorkDir() string
	// Upload extracts a tar archive into dir on the target.
	Upload(ctx context.Context, dir string, archive []byte) error
	// Own gives dir and everything in it to the server's user.
	Own(ctx context.Context, dir string) error
	// Download copies the directory src on the target to dst on this
	// machine, replacing dst.
	Download(ctx context.Context, src, dst string) error
}

// Installer puts the extension into the target before the server starts.
// A non-nil check runs after the suites (e.g. uninstall, and check that
// nothing is left); its error fails the run.
type Installer func(ctx context.Context, t Target, stage func(string)) (check func(context.Context) error, err error)

// Options configure Run.
type Options struct {
	Passes  []Pass    // the suites' runs (Passes)
	Updates []Update  // the update checks (Updates)
	Install Installer // nil: the extension is already there
	// Results is the directory on this machine that receives
	// Results/regress and Results/isolation (and Results/PASS/... for
	// the other passes); "" leaves them on the target.
	Results string
	Keep    bool // leave the server running
	Stage   func(string)
	// Settings are server settings ("name=value") the server starts with.
	Settings []string
}

// Outcome is what Run learned.
type Outcome struct {
	Server  string // server_version as the server reports it
	Version string // version()
	Machine string // uname -m where the server runs
	Result  suite.Result
}

// Port is the server's port (on its unix socket only).
const Port = 5432

// Run runs both suites on t. An error means the suites could not run (or
// the installer's check failed); failed tests are in the result.
func Run(ctx context.Context, t Target, o Options) (out Outcome, err error) {
	stage := o.Stage
	if stage == nil {
		stage = func(string) {}
	}
	l, root, srv := t.Layout(), t.Root(), t.Server()
	out.Result = suite.NewResult()
	if o.Install != nil {
		stage("installing")
		check, ierr := o.Install(ctx, t, stage)
		if ierr != nil {
			return out, fmt.Errorf("install: %w", ierr)
		}
		if check != nil {
			// the check (an uninstall, say) runs however the rest ends;
			// its error joins Run's own (the named result)
			defer func() { err = errors.Join(err, check(ctx)) }()
		}
	}
	work := t.WorkDir()
	if err := Must(ctx, root, "mkdir", "-p", work); err != nil {
		return out, err
	}
	for _, p := range o.Passes {
		dir := path.Join(work, "suites", p.dir())
		if err := Must(ctx, root, "mkdir", "-p", dir); err != nil {
			return out, err
		}
		if err := t.Upload(ctx, dir, p.Suites); err != nil {
			return out, err
		}
	}
	if err := t.Own(ctx, work); err != nil {
		return out, err
	}

	stage("initdb")
	data := path.Join(work, "data")
	if err := Must(ctx, srv, append([]string{l.Bin("initdb")}, pgserver.InitdbArgs(data, t.User())...)...); err != nil {
		return out, err
	}
	stage("starting server")
	logFile := path.Join(work, "server.log")
	if err := Must(ctx, srv, append([]string{l.Bin("pg_ctl")}, pgserver.PgCtlStartArgs(data, work, Port, logFile, o.Settings...)...)...); err != nil {
		log, _ := srv.ReadFile(ctx, logFile)
		return out, fmt.Errorf("%w\nserver log:\n%s", err, log)
	}
	if !o.Keep {
		defer func() {
			// on its own context, so that the server stops after a cancel too
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			Must(sctx, srv, l.Bin("pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop")
		}()
	}
	v, err := Output(ctx, srv, l.Bin("psql"), "-X", "-At", "-h", work, "-p", strconv.Itoa(Port), "-U", t.User(), "-d", "postgres",
		"-c", "SELECT current_setting('server_version'), version()")
	if err != nil {
		return out, fmt.Errorf("ask the server its version: %w", err)
	}
	out.Server, out.Version, _ = strings.Cut(strings.TrimSpace(string(v)), "|")
	m, err := Output(ctx, srv, "uname", "-m")
	if err != nil {
		return out, err
	}
	out.Machine = strings.TrimSpace(string(m))

	for _, p := range o.Passes {
		results := path.Join(work, "results", p.dir())
		if err := Must(ctx, srv, "mkdir", "-p", results); err != nil {
			return out, err
		}
		what := ""
		if p.Name != "" {
			what = p.Name + " "
		}
		res, err := suite.Run(ctx, srv, suite.Options{
			PgRegress:          l.PgRegress(),
			PgIsolationRegress: l.PgIsolationRegress(),
			BinDir:             l.BinDir,
			InputDir:           path.Join(work, "suites", p.dir()),
			OutputDir:          results,
			Host:               work,
			Port:               Port,
			User:               t.User(),
			Tests:              p.Tests,
			Suffix:             p.CaseSuffix(),
			Starting:           func(k suite.Kind) { stage(fmt.Sprintf("%s%s (%d tests)", what, k, len(p.Tests[k]))) },
		})
		// what finished before an error counts: the report marks the rest
		out.Result.Add(res)
		if err != nil {
			return out, err
		}
		if o.Results != "" {
			stage("copying results")
			for _, k := range suite.Kinds {
				if err := t.Download(ctx, path.Join(results, string(k)), filepath.Join(o.Results, p.Name, string(k))); err != nil {
					return out, err
				}
			}
		}
	}
	if len(o.Updates) > 0 {
		res, err := runUpdates(ctx, t, o, stage)
		out.Result.Add(res)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// Output runs argv and returns its standard output; it fails unless argv
// exits 0, with both streams in the error.
func Output(ctx context.Context, e suite.Executor, argv ...string) ([]byte, error) {
	stdout, stderr, code, err := e.Run(ctx, argv)
	if err == nil && code != 0 {
		err = fmt.Errorf("%s exited with %d", strings.Join(argv, " "), code)
	}
	if err != nil {
		return stdout, fmt.Errorf("%w:\n%s%s", err, stdout, stderr)
	}
	return stdout, nil
}

// Must runs argv and fails unless it exits 0; the error has its output.
func Must(ctx context.Context, e suite.Executor, argv ...string) error {
	_, err := Output(ctx, e, argv...)
	return err
}

// Within joins the archive entry name rel to dir, and refuses a name that
// would land outside dir (../, or an absolute name).
func Within(dir, rel string) (string, error) {
	target := filepath.Join(dir, filepath.FromSlash(rel))
	r, err := filepath.Rel(filepath.Clean(dir), target)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("bad entry %q: outside %s", rel, dir)
	}
	return target, nil
}

// errPermission says how to get the right to install.
func errPermission(err error, dir string) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w: writing into %s needs root (or `make install` as root first)", err, dir)
	}
	return err
}
