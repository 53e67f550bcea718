package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/suite"
)

// ErrFailed is returned when the suites ran and some test failed.
var ErrFailed = errors.New("tests failed")

// LocalOptions configure RunLocal.
type LocalOptions struct {
	PgConfig string // pg_config to use; "" looks it up on PATH
	Src      fs.FS  // templates and suites
	Keep     bool   // leave the server running and its files behind
	Results  string // where the drivers write results and diffs; kept after the run
}

// hostExec runs the drivers on this machine.
type hostExec struct{}

func (hostExec) Run(ctx context.Context, argv []string) ([]byte, []byte, int, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return stdout.Bytes(), stderr.Bytes(), ee.ExitCode(), nil
	}
	if err != nil {
		return stdout.Bytes(), stderr.Bytes(), -1, err
	}
	return stdout.Bytes(), stderr.Bytes(), 0, nil
}

func (hostExec) ReadFile(_ context.Context, path string) ([]byte, error) { return os.ReadFile(path) }

// InstallFiles renders the extension and writes its control file and
// install script into the installation's extension directory.
func InstallFiles(ext model.Extension, src fs.FS, inst Install) error {
	files, err := render.Extension(ext, src)
	if err != nil {
		return err
	}
	keep := render.Files{ext.ScriptFile(): files[ext.ScriptFile()], ext.ControlFile(): files[ext.ControlFile()]}
	if err := render.Write(inst.ExtensionDir(), keep); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("install %s into %s: %w: run as root (or `make install` as root first)", ext.Name, inst.ExtensionDir(), err)
		}
		return fmt.Errorf("install %s: %w", ext.Name, err)
	}
	return nil
}

// RunLocal installs the rendered extension into the local installation,
// starts a throwaway server from it, runs both suites and stops the server.
// Progress goes to w. It returns ErrFailed when a test failed.
func RunLocal(ctx context.Context, ext model.Extension, o LocalOptions, w io.Writer) (suite.Result, error) {
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(w, "[%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	inst, err := FindInstall(ctx, o.PgConfig)
	if err != nil {
		return suite.Result{}, err
	}
	if !ext.Supports(inst.Major) {
		return suite.Result{}, fmt.Errorf("%s is PostgreSQL %d: %s supports %s", inst.PgConfig, inst.Major, ext.Name, ext.MajorList())
	}
	step("PostgreSQL %d at %s", inst.Major, inst.BinDir)
	if err := InstallFiles(ext, o.Src, inst); err != nil {
		return suite.Result{}, err
	}
	step("installed %s %s into %s", ext.Name, ext.Version, inst.ExtensionDir())

	work, err := os.MkdirTemp("", "pglease-test-")
	if err != nil {
		return suite.Result{}, err
	}
	if !o.Keep {
		defer os.RemoveAll(work)
	}
	if err := suite.Extract(o.Src, work); err != nil {
		return suite.Result{}, err
	}
	tests, err := suite.AllTests(o.Src)
	if err != nil {
		return suite.Result{}, err
	}

	srv, err := Start(ctx, inst, "")
	if err != nil {
		return suite.Result{}, err
	}
	step("server started on socket %s", srv.Socket())
	defer func() {
		if o.Keep {
			step("server left running: psql 'host=%s user=%s dbname=postgres'; stop it with pg_ctl -D %s/data stop", srv.Socket(), srv.User, srv.Dir)
			return
		}
		if err := srv.Stop(); err != nil {
			step("stop server: %v", err)
		}
	}()

	results, err := filepath.Abs(o.Results)
	if err != nil {
		return suite.Result{}, err
	}
	for _, k := range suite.Kinds {
		if err := os.RemoveAll(filepath.Join(results, string(k))); err != nil {
			return suite.Result{}, fmt.Errorf("clear old results: %w", err)
		}
	}
	if err := os.MkdirAll(results, 0o755); err != nil {
		return suite.Result{}, err
	}
	step("running %d regress tests and %d isolation specs; results in %s", len(tests[suite.Regress]), len(tests[suite.Isolation]), results)
	res, err := suite.Run(ctx, hostExec{}, suite.Options{
		PgRegress:          inst.PgRegress(),
		PgIsolationRegress: inst.PgIsolationRegress(),
		BinDir:             inst.BinDir,
		InputDir:           work,
		OutputDir:          results,
		Host:               srv.Socket(),
		Port:               srv.Port,
		User:               srv.User,
		Tests:              tests,
	})
	if err != nil {
		return res, err
	}
	step("done")
	suite.Report(w, res)
	if !res.Passed() {
		return res, ErrFailed
	}
	return res, nil
}

// StartWithExtension installs the rendered extension into the
// installation that pgConfig names ("" looks pg_config up on PATH) and
// starts a throwaway server of it with settings; the caller runs CREATE
// EXTENSION where it wants it.
func StartWithExtension(ctx context.Context, pgConfig string, ext model.Extension, src fs.FS, settings ...string) (*Server, Install, error) {
	inst, err := FindInstall(ctx, pgConfig)
	if err != nil {
		return nil, inst, err
	}
	if err := InstallFiles(ext, src, inst); err != nil {
		return nil, inst, err
	}
	srv, err := StartWith(ctx, inst, "", settings...)
	return srv, inst, err
}

// InstallVariant installs a copy of the extension under another name, its
// install script changed by edit, for tests that need the extension with
// a bug put in or a part taken out. remove deletes the copy's files.
func InstallVariant(ext model.Extension, src fs.FS, inst Install, name string, edit func(string) (string, error)) (remove func(), err error) {
	files, err := render.Extension(ext, src)
	if err != nil {
		return nil, err
	}
	script, err := edit(string(files[ext.ScriptFile()]))
	if err != nil {
		return nil, err
	}
	control := filepath.Join(inst.ExtensionDir(), name+".control")
	sql := filepath.Join(inst.ExtensionDir(), name+"--"+ext.Version+".sql")
	remove = func() { os.Remove(control); os.Remove(sql) }
	if err := errors.Join(os.WriteFile(control, files[ext.ControlFile()], 0o644), os.WriteFile(sql, []byte(script), 0o644)); err != nil {
		remove()
		return nil, fmt.Errorf("install variant %s: %w", name, err)
	}
	return remove, nil
}

// Exec runs statements, one after another, in a new connection to dsn.
func Exec(ctx context.Context, dsn string, sqls ...string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range sqls {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}
