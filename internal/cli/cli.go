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
	"syscall"

	"github.com/spf13/cobra"
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
	root.AddCommand(newRender(), newBuild(), newTest(), newImages(), newKeygen(), newStress(), newVersion())
	return root
}
