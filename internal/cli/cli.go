// Package cli is the pglease-gen command line: thin cobra commands over the
// domain packages. Run builds a fresh command tree on every call, so the
// whole CLI runs in-process in tests.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/container"
	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/junit"
	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/progress"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/rpm"
	"github.com/pglease/pglease-gen/internal/stress"
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
	root.AddCommand(newRender(), newBuild(), newTest(), newImages(), newStress(), newVersion())
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

type buildCmd struct {
	out, pg, suffix, builder string
	json                     bool
}

func newBuild() *cobra.Command {
	c := &buildCmd{}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the source tarball, RPM spec, RPMs and EL9 repository trees",
		Long: "Build into --out (replaced as a whole; a directory not written by build is\n" +
			"refused): the source tarball, the spec, per major a source RPM (SRPMS/) and\n" +
			"a noarch binary RPM, and the repository trees el9.x86_64/ and el9.aarch64/\n" +
			"with their metadata, plus SHA256SUMS. The default builder writes the\n" +
			"packages in pure Go; --builder rpmbuild runs the spec through rpmbuild.\n" +
			"SOURCE_DATE_EPOCH (default: the newest changelog date) sets every time\n" +
			"stamp: two builds with the same value are byte-identical.",
		Example: "  pglease-gen build\n" +
			"  pglease-gen build --pg 16,17 --release-suffix PGDG --builder rpmbuild --out /tmp/dist\n" +
			"  SOURCE_DATE_EPOCH=1767225600 pglease-gen build --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&c.out, "out", "dist", "directory to write into")
	f.StringVar(&c.pg, "pg", "all", "majors to package: 17, 14,16 or all")
	f.StringVar(&c.suffix, "release-suffix", model.Packages.Suffixes[0], "release suffix: "+strings.Join(model.Packages.Suffixes, " or "))
	f.StringVar(&c.builder, "builder", rpm.Rpmpack, "how to write the packages: rpmpack (pure Go) or rpmbuild")
	f.BoolVar(&c.json, "json", false, "print what was written as JSON on stdout (progress goes to stderr)")
	return cmd
}

func (c *buildCmd) run(cmd *cobra.Command) error {
	majors, err := model.PgLease.ParseMajors(c.pg)
	if err != nil {
		return err
	}
	suffix, err := model.Packages.ParseSuffix(c.suffix)
	if err != nil {
		return err
	}
	if c.builder != rpm.Rpmpack && c.builder != rpm.Rpmbuild {
		return fmt.Errorf("unknown --builder %q: use %s or %s", c.builder, rpm.Rpmpack, rpm.Rpmbuild)
	}
	when, err := sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	progress := cmd.OutOrStdout()
	if c.json {
		progress = cmd.ErrOrStderr()
	}
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(progress, "[%5.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	files, arts, err := rpm.Build(cmd.Context(), rpm.Options{
		Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files, Majors: majors,
		Suffix: suffix, Builder: c.builder, Time: when, Step: step,
	})
	if err != nil {
		return err
	}
	if err := rpm.Publish(c.out, files); err != nil {
		return err
	}
	step("wrote %d files into %s", len(files), c.out)
	if c.json {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"name": model.PgLease.Name, "version": model.PgLease.Version, "release_suffix": suffix,
			"builder": c.builder, "source_date_epoch": when.Unix(), "out": c.out, "artifacts": arts,
		})
	}
	w := cmd.OutOrStdout()
	fmt.Fprintln(w)
	for _, a := range arts {
		fmt.Fprintf(w, "%-9s %8d  %s  %s\n", a.Kind, a.Size, a.SHA256, filepath.Join(c.out, a.Path))
	}
	return nil
}

// sourceDateEpoch parses SOURCE_DATE_EPOCH; unset means the newest
// changelog date, so that builds are reproducible by default.
func sourceDateEpoch(s string) (time.Time, error) {
	if s == "" {
		return model.Packages.Released(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds since 1970 (0 to %d)", s, math.MaxInt32)
	}
	return time.Unix(n, 0).UTC(), nil
}

type testCmd struct {
	local    bool
	pgConfig string
	pg       string
	image    string
	jobs     int
	junit    string
	timeout  time.Duration
	keep     bool
	results  string
	rpm      string
}

func newTest() *cobra.Command {
	c := &testCmd{}
	cmd := &cobra.Command{
		Use:   "test (--pg MAJORS | --local)",
		Short: "Run the pg_regress and isolation suites on PostgreSQL 14-18 in Docker, or locally",
		Long: "With --pg, run both suites inside Docker for each major: a container from\n" +
			"IMAGE:MAJOR with no network, the rendered extension copied into the server's\n" +
			"extension directory, a throwaway server on a unix socket, pg_regress and\n" +
			"pg_isolation_regress run in the container, results copied back to\n" +
			"--results/pgN. Majors run in parallel, --jobs at a time.\n\n" +
			"With --local, install the rendered extension into the PostgreSQL found by\n" +
			"pg_config and run both suites against a throwaway server on this machine.\n\n" +
			"Exit status: 0 all passed, 1 a test failed or a suite could not run, 2 usage\n" +
			"or setup error (no Docker daemon, missing image).",
		Example: "  pglease-gen test --pg all\n" +
			"  pglease-gen test --pg 14,17 --image pglease/postgres --junit build/junit.xml\n" +
			"  pglease-gen test --local --pg-config /usr/lib/postgresql/15/bin/pg_config",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(cmd) },
	}
	image := os.Getenv("PGLEASE_IMAGE")
	if image == "" {
		image = "postgres"
	}
	f := cmd.Flags()
	f.StringVar(&c.pg, "pg", "", "majors to test in Docker: 17, 14,16 or all")
	f.StringVar(&c.image, "image", image, "image repository; the tag is the major (default from PGLEASE_IMAGE, else postgres)")
	f.IntVar(&c.jobs, "jobs", runtime.NumCPU(), "majors to run at once")
	f.StringVar(&c.junit, "junit", "", "write a JUnit XML report to this file")
	f.DurationVar(&c.timeout, "timeout", 15*time.Minute, "give up on a major after this long")
	f.BoolVar(&c.local, "local", false, "use the local PostgreSQL installation found by pg_config instead of Docker")
	f.StringVar(&c.pgConfig, "pg-config", "", "with --local: pg_config of the installation to use (default: the one on PATH)")
	f.BoolVar(&c.keep, "keep", false, "leave the containers (or the local server) running, for debugging")
	f.StringVar(&c.results, "results", "build/results", "directory for the drivers' results and regression.diffs")
	f.StringVar(&c.rpm, "rpm", "", "install with `dnf install -y pg_lease_N` from this repository (a tree of pglease-gen build,\n"+
		"or its output directory) instead of copying files; the server layout is PGDG's /usr/pgsql-N\n"+
		"and the image defaults to the local EL9 stand-in "+images.EL9Repository)
	cmd.MarkFlagsMutuallyExclusive("local", "pg")
	cmd.MarkFlagsMutuallyExclusive("local", "rpm")
	return cmd
}

func (c *testCmd) run(cmd *cobra.Command) error {
	if c.local {
		_, err := pgtest.RunLocal(cmd.Context(), model.PgLease, pgtest.LocalOptions{
			PgConfig: c.pgConfig, Src: pglease.Files, Keep: c.keep, Results: c.results,
		}, cmd.OutOrStdout())
		if errors.Is(err, pgtest.ErrFailed) {
			return &exitError{ExitFailure, err}
		}
		return err
	}
	if c.pg == "" {
		return fmt.Errorf("say where to test: --pg 17 (or 14,16 or all) runs in Docker, --local against the PostgreSQL found by pg_config")
	}
	majors, err := model.PgLease.ParseMajors(c.pg)
	if err != nil {
		return err
	}
	if c.jobs < 1 {
		return fmt.Errorf("--jobs must be at least 1, not %d", c.jobs)
	}
	opts := container.Options{
		Ext: model.PgLease, Src: pglease.Files, Majors: majors, Image: c.image, Jobs: c.jobs,
		Keep: c.keep, Results: c.results, Timeout: c.timeout,
	}
	if c.rpm != "" {
		repo, err := container.FindRepo(c.rpm, model.Packages)
		if err != nil {
			return err
		}
		if !cmd.Flags().Changed("image") {
			opts.Image = images.EL9Repository
		}
		opts.Layout = layout.PGDG
		opts.Install = container.DNFInstall(model.PgLease, repo)
	}
	pool, err := docker.Connect()
	if err != nil {
		return err
	}
	if err := container.CheckImages(pool, opts.Image, majors); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	opts.Board = progress.New(out, progress.IsTerminal(out))
	results, err := container.Run(cmd.Context(), pool, opts)
	opts.Board.Stop()
	if err != nil {
		return err
	}
	container.Report(out, results)
	if c.junit != "" {
		if err := writeJUnit(c.junit, container.JUnit(results)); err != nil {
			return err
		}
		fmt.Fprintf(out, "JUnit report: %s\n", c.junit)
	}
	for _, r := range results {
		if !r.Passed() {
			return &exitError{ExitFailure, errors.New("tests failed")}
		}
	}
	return nil
}

func writeJUnit(file string, suites []junit.Suite) error {
	var buf bytes.Buffer
	if err := junit.Write(&buf, suites); err != nil {
		return err
	}
	dir, name := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	return render.Write(dir, render.Files{name: buf.Bytes()})
}

type imagesCmd struct{ pg, cache string }

func newImages() *cobra.Command {
	c := &imagesCmd{}
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build local stand-ins for the official postgres:N images",
		Long: "Build " + images.Repository + ":N for each major from a Debian 12 root file system\n" +
			"(debootstrap, as root) and the pinned PostgreSQL server builds of the npm\n" +
			"registry, with the official images' layout. Images whose recipe has not\n" +
			"changed are left alone. Use them with: pglease-gen test --image " + images.Repository,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			majors, err := model.PgLease.ParseMajors(c.pg)
			if err != nil {
				return err
			}
			pool, err := docker.Connect()
			if err != nil {
				return err
			}
			return images.Build(cmd.Context(), pool.Client, images.Options{
				Majors: majors, CacheDir: c.cache, Mirror: os.Getenv("PGLEASE_DEBIAN_MIRROR"), Progress: cmd.OutOrStdout(),
			})
		},
	}
	cmd.Flags().StringVar(&c.pg, "pg", "all", "majors to build: 17, 14,16 or all")
	cmd.Flags().StringVar(&c.cache, "cache", "", "download cache (default: the user cache dir, pglease-gen)")
	return cmd
}

type stressCmd struct {
	cfg      stress.Config
	pgConfig string
	report   int
}

func newStress() *cobra.Command {
	c := &stressCmd{}
	cmd := &cobra.Command{
		Use:   "stress",
		Short: "Run many clients against pg_lease and check the history",
		Long: "Start a throwaway server (or use --dsn), run --clients clients on --names names\n" +
			"doing random acquire (blocking and not), renew, release and inspect with TTLs\n" +
			"from milliseconds to seconds for --duration, then check every call and the\n" +
			"final table against the lease's guarantees. The last line is\n" +
			"`stress: N operations checked, V violations`; the exit status is 1 when V > 0.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(cmd) },
	}
	f := cmd.Flags()
	f.DurationVar(&c.cfg.Duration, "duration", 30*time.Second, "how long the clients run")
	f.IntVar(&c.cfg.Clients, "clients", 8, "concurrent clients (one connection and one owner each)")
	f.IntVar(&c.cfg.Names, "names", 4, "lease names they contend for")
	f.Uint64Var(&c.cfg.Seed, "seed", 1, "random seed of the workload")
	f.StringVar(&c.cfg.DSN, "dsn", "", "a server with pg_lease installed (default: start a throwaway one)")
	f.StringVar(&c.pgConfig, "pg-config", "", "without --dsn: pg_config of the installation to start")
	f.IntVar(&c.report, "show", 10, "violations to print in full")
	return cmd
}

func (c *stressCmd) run(cmd *cobra.Command) error {
	ctx, w := cmd.Context(), cmd.OutOrStdout()
	if c.cfg.Clients < 1 || c.cfg.Names < 1 || c.cfg.Duration <= 0 {
		return errors.New("--clients, --names and --duration must be positive")
	}
	if c.cfg.DSN == "" {
		srv, inst, err := pgtest.StartWithExtension(ctx, c.pgConfig, model.PgLease, pglease.Files)
		if err != nil {
			return err
		}
		defer srv.Stop()
		c.cfg.DSN = srv.DSN("postgres")
		conn, err := pgx.Connect(ctx, c.cfg.DSN)
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, "CREATE EXTENSION pg_lease")
		conn.Close(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "server: PostgreSQL %d on %s\n", inst.Major, srv.Socket())
	}
	cfg := c.cfg.Defaults()
	fmt.Fprintf(w, "stress: %d clients x %d names for %s (seed %d)\n", cfg.Clients, cfg.Names, cfg.Duration, cfg.Seed)
	start := time.Now()
	ops, err := stress.Run(ctx, cfg)
	if err != nil {
		return err
	}
	final, err := stress.Table(ctx, cfg.DSN, cfg.Prefix)
	if err != nil {
		return err
	}
	ran := time.Since(start)
	counts := map[string]int{}
	for _, o := range ops {
		counts[string(o.Kind)]++
	}
	fmt.Fprintf(w, "ran %s: %d acquire, %d renew, %d release, %d inspect (%.0f/s)\n", ran.Round(time.Millisecond),
		counts["acquire"], counts["renew"], counts["release"], counts["inspect"], float64(len(ops))/ran.Seconds())
	start = time.Now()
	vs := stress.Check(ops, final)
	fmt.Fprintf(w, "checked in %s\n", time.Since(start).Round(time.Millisecond))
	for i, v := range vs {
		if i == c.report {
			fmt.Fprintf(w, "... and %d more\n", len(vs)-i)
			break
		}
		fmt.Fprintln(w, v)
	}
	fmt.Fprintf(w, "stress: %d operations checked, %d violations\n", len(ops), len(vs))
	if len(vs) > 0 {
		return &exitError{ExitFailure, fmt.Errorf("%d violations", len(vs))}
	}
	return nil
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
