package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/suite"
)

// ErrFailed is returned when the suites ran and some test failed.
var ErrFailed = errors.New("tests failed")

// LocalOptions configure RunLocal.
type LocalOptions struct {
	PgConfig string // pg_config to use; "" looks it up on PATH
	Src      fs.FS  // templates and suites
	Keep     bool   // leave the server running and its files behind
	Results  string // receives regress/ and isolation/ results and diffs
	// NewestOnly: the newest version's suites only (container.Options)
	NewestOnly bool
}

// RunLocal runs both suites on this machine's installation (the Host
// target): it installs the rendered extension there, starts a throwaway
// server, runs the suites and stops the server. Progress goes to w. It
// returns ErrFailed when a test failed.
func RunLocal(ctx context.Context, ext model.Extension, o LocalOptions, w io.Writer) (suite.Result, error) {
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(w, "[%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	if o.Results == "" {
		return suite.Result{}, errors.New("no results directory: pass --results DIR")
	}
	results, err := filepath.Abs(o.Results)
	if err != nil {
		return suite.Result{}, err
	}
	// the run replaces results/regress and results/isolation: never the
	// suites' own directories
	for _, src := range []string{"regress/sql", "isolation/specs"} {
		if _, err := os.Stat(filepath.Join(results, src)); err == nil {
			return suite.Result{}, fmt.Errorf("%s holds the test suites (%s): choose another results directory", results, src)
		}
	}
	inst, err := pgserver.FindInstall(ctx, o.PgConfig)
	if err != nil {
		return suite.Result{}, err
	}
	if !ext.Supports(inst.Major) {
		return suite.Result{}, fmt.Errorf("%s is PostgreSQL %d: %s supports %s", inst.PgConfig, inst.Major, ext.Name, ext.MajorList())
	}
	step("PostgreSQL %d at %s", inst.Major, inst.BinDir)
	passes, err := Passes(ext, o.Src)
	if err != nil {
		return suite.Result{}, err
	}
	if o.NewestOnly {
		passes = passes[:1]
	}
	host, err := NewHost(inst)
	if err != nil {
		return suite.Result{}, err
	}
	if o.Keep {
		step("work directory %s is kept", host.WorkDir())
	} else {
		defer host.Close()
	}
	out, err := Run(ctx, host, Options{
		Passes: passes, Updates: Updates(ext), Install: CopyFiles(ext, o.Src), Results: results, Keep: o.Keep,
		Stage: func(s string) { step("%s", s) },
	})
	if err != nil {
		return out.Result, err
	}
	step("PostgreSQL %s: done; results in %s", out.Server, results)
	if o.Keep {
		step("server left running: psql 'host=%s user=%s dbname=postgres'; stop it with pg_ctl -D %s/data stop",
			host.WorkDir(), host.User(), host.WorkDir())
	}
	suite.Report(w, out.Result)
	if !out.Result.Passed() {
		return out.Result, ErrFailed
	}
	return out.Result, nil
}
