package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/artifact"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
)

type renderCmd struct {
	out   string
	check bool
}

func newRender() *cobra.Command {
	c := &renderCmd{}
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Write every version's install script, the update scripts and the control file",
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
	if artifact.IsOutput(c.out) {
		return fmt.Errorf("--out %s is a build's output, which pglease-gen build writes and replaces whole: render into another directory (the default is build)", c.out)
	}
	if c.check {
		stale, err := render.Diff(c.out, files)
		if err != nil {
			return err
		}
		stray, err := render.Stray(c.out, model.PgLease, files)
		if err != nil {
			return err
		}
		if len(stale)+len(stray) > 0 {
			for _, s := range stale {
				word := "differs"
				if s.Missing {
					word = "missing"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", word, s.Name)
			}
			for _, s := range stray {
				fmt.Fprintf(cmd.ErrOrStderr(), "stray: %s (render writes no such file; remove it)\n", s)
			}
			return &exitError{ExitFailure, fmt.Errorf("%s not what render writes in %s: run pglease-gen render --out %s, and remove the stray ones", plural(len(stale)+len(stray), "file is", "files are"), c.out, c.out)}
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
