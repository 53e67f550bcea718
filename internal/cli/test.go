package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/container"
	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/junit"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/progress"
	"github.com/pglease/pglease-gen/internal/runner"
)

type testCmd struct {
	local         bool
	noUpdateCheck bool
	pgConfig      string
	pg            string
	image         string
	jobs          int
	junit         string
	json          bool
	timeout       time.Duration
	keep          bool
	versions      string
	results       string
	rpm           string
	deb           string
	distro        string
	arch          string
}

func newTest() *cobra.Command {
	c := &testCmd{}
	cmd := &cobra.Command{
		Use:   "test (--pg MAJORS | --local)",
		Short: "Run the pg_regress and isolation suites on PostgreSQL " + model.PgLease.MajorRange() + " in Docker, or locally",
		Long: "With --pg, run both suites inside Docker for each major: a container from\n" +
			"IMAGE:MAJOR with no network, the rendered extension copied into the server's\n" +
			"extension directory, a throwaway server on a unix socket, pg_regress and\n" +
			"pg_isolation_regress run in the container, results copied back to\n" +
			"--results/pgN. Majors run in parallel, --jobs at a time.\n\n" +
			"With --local, install the rendered extension into the PostgreSQL found by\n" +
			"pg_config and run both suites against a throwaway server on this machine.\n\n" +
			"Exit status: 0 all passed, 1 a test failed or a suite could not run, 2 usage\n" +
			"or setup error (no Docker daemon, missing image).\n\n" +
			"--arch arm64 (or aarch64) runs arm64 images, tagged MAJOR-arm64, under qemu's\n" +
			"emulation; --rpm then installs from el9.aarch64 and --deb from binary-arm64.\n" +
			"The local images have no arm64 PostgreSQL 14: --pg all skips it and says so\n" +
			"(the exit status counts only failures); --pg 14 is a usage error.\n\n" +
			"--rpm DIR --distro el8 installs from DIR's el8 tree on the EL9 stand-in with\n" +
			"dnf --releasever=8, through the .repo form hosts get (el$releasever.$basearch).\n" +
			"--deb takes the suite of the image's release; a signed suite must also verify\n" +
			"with the image's gpgv (exit status 0) and, where it has one, its sqv.",
		Example: "  pglease-gen test --pg all\n" +
			"  pglease-gen test --pg 14,17 --image pglease/postgres --junit build/junit.xml\n" +
			"  pglease-gen test --pg 16 --arch aarch64 --rpm dist\n" +
			"  pglease-gen test --pg 17 --rpm dist --distro el10\n" +
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
	f.StringVar(&c.image, "image", image, "image repository `REPO`, tagged with the major (from $PGLEASE_IMAGE when set)")
	f.IntVar(&c.jobs, "jobs", runtime.NumCPU(), "majors to run at once")
	f.StringVar(&c.junit, "junit", "", "write a JUnit XML report to this file")
	f.BoolVar(&c.json, "json", false, "print the results as JSON on stdout, every planned check with its status (the report and progress go to stderr)")
	f.DurationVar(&c.timeout, "timeout", 15*time.Minute, "give up on a major after this long")
	f.BoolVar(&c.local, "local", false, "use the local PostgreSQL installation found by pg_config instead of Docker")
	f.StringVar(&c.pgConfig, "pg-config", "", "with --local: pg_config of the installation to use (default: the one on PATH)")
	f.BoolVar(&c.keep, "keep", false, "leave the containers (or the local server) running, for debugging")
	f.StringVar(&c.versions, "versions", "all", "whose suites run: all (the newest version's, each older version's, and each older one's updated to the newest) or newest; the update check runs either way")
	f.StringVar(&c.results, "results", "build/results", "directory for the drivers' results and regression.diffs")
	f.BoolVar(&c.noUpdateCheck, "no-update-check", false, "skip the update check (pure SQL, the same on every architecture: make arm64-ci skips it under emulation)")
	f.StringVar(&c.rpm, "rpm", "", "install with dnf install -y pg_lease_N from the `DIR` repository (a tree of pglease-gen build,\n"+
		"or its output directory) instead of copying files; the server layout is PGDG's /usr/pgsql-N\n"+
		"and the image defaults to the local EL9 stand-in "+images.EL9Repository)
	f.StringVar(&c.arch, "arch", runtime.GOARCH, "architecture of the images: amd64 (x86_64) or arm64 (aarch64)")
	cmd.MarkFlagsMutuallyExclusive("local", "pg")
	cmd.MarkFlagsMutuallyExclusive("local", "arch")
	f.StringVar(&c.deb, "deb", "", "install with apt-get install -y postgresql-N-pg-lease from the apt repository `DIR` (pglease-gen build's\n"+
		"output or its apt/), in the pglease/debian:N images, run the suites, then apt-get purge")
	f.StringVar(&c.distro, "distro", "", "with --rpm: the EL release whose tree dnf installs from, with --releasever set to it (default el9);\n"+
		"with --deb: the release whose suite apt uses (default: the image's own, or for sid the newest Debian release)")
	cmd.MarkFlagsMutuallyExclusive("local", "rpm")
	// the local run prints its own report; it writes neither of these
	cmd.MarkFlagsMutuallyExclusive("local", "junit")
	cmd.MarkFlagsMutuallyExclusive("local", "json")
	cmd.MarkFlagsMutuallyExclusive("local", "deb")
	cmd.MarkFlagsMutuallyExclusive("rpm", "deb")
	return cmd
}

func (c *testCmd) run(cmd *cobra.Command) error {
	if c.versions != "all" && c.versions != "newest" {
		return fmt.Errorf("--versions %q: use all or newest", c.versions)
	}
	newest := c.versions == "newest"
	if cmd.Flags().Changed("distro") && strings.TrimSpace(c.distro) == "" {
		return fmt.Errorf("--distro '': name a release, or leave the flag out for the default")
	}
	if c.local {
		_, err := runner.RunLocal(cmd.Context(), model.PgLease, runner.LocalOptions{
			PgConfig: c.pgConfig, Src: pglease.Files, Keep: c.keep, Results: c.results, NewestOnly: newest,
		}, cmd.OutOrStdout())
		if errors.Is(err, runner.ErrFailed) {
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
	arch, err := model.ParseArch(c.arch)
	if err != nil {
		return err
	}
	opts := container.Options{
		Ext: model.PgLease, Src: pglease.Files, Image: c.image, Jobs: c.jobs, Arch: arch,
		Keep: c.keep, Results: c.results, Timeout: c.timeout, NewestOnly: newest, NoUpdateCheck: c.noUpdateCheck,
	}
	if c.rpm != "" {
		distro := cmp.Or(c.distro, strings.TrimPrefix(model.Packages.Dist, "."))
		d, ok := model.DistroNamed(distro)
		if !ok || d.Format != model.RPM {
			return fmt.Errorf("--distro %s with --rpm: use an EL release (%s)", distro, strings.Join(model.Names(model.OfFormat(model.Distros, model.RPM)), ", "))
		}
		if majors, err = opts.FromRPMs(c.rpm, d, majors, cmd.Flags().Changed("image")); err != nil {
			return err
		}
	}
	if c.deb != "" {
		if d, ok := model.DistroNamed(c.distro); c.distro != "" && (!ok || d.Format != model.Deb) {
			return fmt.Errorf("--distro %s with --deb: use a Debian or Ubuntu release (%s), or leave it out for the image's own", c.distro, strings.Join(model.Names(model.OfFormat(model.Distros, model.Deb)), ", "))
		}
		if err := opts.FromDebs(c.deb, c.distro, cmd.Flags().Changed("image")); err != nil {
			return err
		}
	}
	var skipped []container.MajorResult
	opts.Majors, skipped, err = container.Plan(majors, arch, opts.Image, strings.TrimSpace(c.pg) == "all")
	if err != nil {
		return err
	}
	var results []container.MajorResult
	out := cmd.OutOrStdout()
	if c.json {
		out = cmd.ErrOrStderr()
	}
	if len(opts.Majors) > 0 {
		pool, err := docker.Connect()
		if err != nil {
			return err
		}
		if err := container.CheckImages(pool, opts.Image, opts.Majors, arch); err != nil {
			return err
		}
		opts.Board = progress.New(out, progress.IsTerminal(out))
		results, err = container.Run(cmd.Context(), pool, opts)
		opts.Board.Stop()
		if err != nil {
			return err
		}
	}
	results = append(results, skipped...)
	slices.SortFunc(results, func(a, b container.MajorResult) int { return a.Major - b.Major })
	container.Report(out, results)
	if c.junit != "" {
		if err := junit.WriteFile(c.junit, container.JUnit(results)); err != nil {
			return err
		}
		fmt.Fprintf(out, "JUnit report: %s\n", c.junit)
	}
	if c.json {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(container.Summarize(results)); err != nil {
			return err
		}
	}
	if msg := container.Interrupted(results); msg != "" {
		return &exitError{ExitFailure, errors.New(msg)}
	}
	for _, r := range results {
		if r.Failed() {
			return &exitError{ExitFailure, errors.New("tests failed")}
		}
	}
	return nil
}
