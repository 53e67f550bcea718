// Package cli is the pglease-gen command line: thin cobra commands over the
// domain packages. Run builds a fresh command tree on every call, so the
// whole CLI runs in-process in tests.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/render"
)

// Version is the tool's version, set at link time for releases.
var Version = "dev"

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1 // the work ran and found a problem: failing tests, stale files
	ExitUsage   = 2 // bad flags or arguments, or the work could not run
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Run runs pglease-gen with args (without the program name) and returns the
// process exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "pglease-gen: %v\n", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitUsage
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "pglease-gen",
		Short:         "Render, package and test the pg_lease PostgreSQL extension",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newRender(), newBuild(), newTest(), newVersion())
	return root
}

type renderCmd struct {
	out   string
	check bool
}

func newRender() *cobra.Command {
	c := &renderCmd{}
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Write the install script and control file",
		Long: "Render pg_lease--VERSION.sql, pg_lease.control and pglease.mk (the facts the\n" +
			"PGXS Makefile reads) from the embedded templates into --out.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(cmd) },
	}
	cmd.Flags().StringVar(&c.out, "out", "build", "directory to write into")
	cmd.Flags().BoolVar(&c.check, "check", false, "write nothing; exit 1 if a file in --out is missing or differs")
	return cmd
}

func (c *renderCmd) run(cmd *cobra.Command) error {
	files, err := render.Extension(model.PgLease, pglease.Files)
	if err != nil {
		return err
	}
	if c.check {
		stale, err := render.Diff(c.out, files)
		if err != nil {
			return err
		}
		if len(stale) > 0 {
			for _, n := range stale {
				fmt.Fprintf(cmd.ErrOrStderr(), "stale: %s\n", n)
			}
			return &exitError{ExitFailure, fmt.Errorf("%d file(s) in %s are not what render writes: run pglease-gen render --out %s", len(stale), c.out, c.out)}
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s is up to date\n", c.out)
		return nil
	}
	if err := render.Write(c.out, files); err != nil {
		return err
	}
	for _, n := range files.Names() {
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes)\n", filepath.Join(c.out, n), len(files[n]))
	}
	return nil
}

type buildCmd struct{ out string }

func newBuild() *cobra.Command {
	c := &buildCmd{}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the extension's distributable files",
		Long:  "Render the extension into --out. Packaging (tarball, RPM spec and RPMs) builds on this.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return (&renderCmd{out: c.out}).run(cmd)
		},
	}
	cmd.Flags().StringVar(&c.out, "out", "dist", "directory to write into")
	return cmd
}

type testCmd struct {
	local    bool
	pgConfig string
	keep     bool
	results  string
}

func newTest() *cobra.Command {
	c := &testCmd{}
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Run the pg_regress and isolation suites against a throwaway server",
		Long: "With --local, install the rendered extension into the PostgreSQL found by\n" +
			"pg_config, start a throwaway server on a unix socket in a temporary\n" +
			"directory, run both suites, print the diffs of any failure and stop it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(cmd) },
	}
	cmd.Flags().BoolVar(&c.local, "local", false, "use the local PostgreSQL installation found by pg_config")
	cmd.Flags().StringVar(&c.pgConfig, "pg-config", "", "pg_config of the installation to use (default: the one on PATH)")
	cmd.Flags().BoolVar(&c.keep, "keep", false, "leave the server running and its files behind, for debugging")
	cmd.Flags().StringVar(&c.results, "results", "build/results", "directory for the drivers' results and regression.diffs")
	return cmd
}

func (c *testCmd) run(cmd *cobra.Command) error {
	if !c.local {
		return errors.New("say where to test: --local runs against the PostgreSQL found by pg_config")
	}
	_, err := pgtest.RunLocal(cmd.Context(), model.PgLease, pgtest.LocalOptions{
		PgConfig: c.pgConfig, Src: pglease.Files, Keep: c.keep, Results: c.results,
	}, cmd.OutOrStdout())
	if errors.Is(err, pgtest.ErrFailed) {
		return &exitError{ExitFailure, err}
	}
	return err
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tool's version and what it builds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e := model.PgLease
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "pglease-gen %s: %s %s for PostgreSQL %s\n", Version, e.Name, e.Version, e.MajorList())
			return err
		},
	}
}
