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
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Version is the tool's version, set at link time for releases; an
// unstamped build takes it from the module's build information.
var Version = "dev"

// version is Version, or for an unstamped build the module's version and
// the commit it was built from (with "+dirty" for local changes), as the
// Go toolchain records them; "dev" when there are none (go run, tests).
func version() string {
	if Version != "dev" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = Version
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && !strings.Contains(v, rev) {
		v += " (commit " + rev + dirty + ")"
	}
	return v
}

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

// stoppedBy is the cause of a run's context cancelled by a signal.
type stoppedBy struct{ sig syscall.Signal }

func (s stoppedBy) Error() string  { return "stopped by " + s.sig.String() }
func (e *exitError) Unwrap() error { return e.err }

// Run runs pglease-gen with args (without the program name) and returns the
// process exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// the first SIGINT or SIGTERM cancels the work (a build then keeps
	// the old output and removes its staging) and exits 128 + the
	// signal's number, as a shell reports it; a second one kills
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case sig := <-sigs:
			signal.Stop(sigs)
			cancel(stoppedBy{sig.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "pglease-gen: %v\n", err)
	}
	// (a command that chose its exit status keeps it: test reports an
	// interrupted run as failed, 1, with its JUnit)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var stop stoppedBy
	if errors.As(context.Cause(ctx), &stop) {
		fmt.Fprintf(stderr, "pglease-gen: stopped by %s\n", stop.sig)
		return 128 + int(stop.sig)
	}
	if err == nil {
		return ExitOK
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
		Version:       version(),
	}
	root.SetVersionTemplate("pglease-gen {{ .Version }}\n")
	root.AddCommand(newRender(), newBuild(), newTest(), newImages(), newKeygen(), newStress(), newVersion())
	root.SetFlagErrorFunc(flagError)
	for _, c := range root.Commands() {
		completions(c)
		if c.Args != nil {
			c.Args = noArgs
		}
	}
	// (cobra adds it when it executes; added here, the tree the docs test
	// reads has it too)
	root.InitDefaultCompletionCmd()
	return root
}

// plural is "1 file is" or "2 files are": n with the form that fits it.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// noArgs refuses a stray argument saying what it is (cobra's own message,
// unknown command "extra", suggests a subcommand where none is).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments, only flags (--name value), and got %q; see %s --help", cmd.CommandPath(), args[0], cmd.CommandPath())
	}
	return nil
}

// flagError says what a flag's value must be, without the parser's words
// (strconv.ParseInt: parsing "2.5": invalid syntax).
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if i := strings.Index(msg, ": strconv.Parse"); i >= 0 {
		what := "a whole number"
		if strings.Contains(msg[i:], "ParseBool") {
			what = "true or false"
		} else if strings.Contains(msg[i:], "out of range") {
			what = "a whole number in range"
		}
		msg = msg[:i] + ": give " + what
	}
	return fmt.Errorf("%s; see %s --help", msg, cmd.CommandPath())
}
