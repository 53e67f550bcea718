package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pglease/pglease-gen/internal/model"
)

func newVersion() *cobra.Command {
	var majors bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the tool's version and what it builds",
		Long: "Print the tool's version, the extension's and the PostgreSQL majors it supports.\n\n" +
			"--majors prints only the majors, as a JSON array: the CI pipeline's matrices\n" +
			"read it, so that a major added to the model is tested everywhere.",
		Example: "  pglease-gen version\n  pglease-gen version --majors",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e := model.PgLease
			if majors {
				b, err := json.Marshal(e.Majors)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "pglease-gen %s: %s %s for PostgreSQL %s\n", version(), e.Name, e.Version(), e.MajorList())
			return err
		},
	}
	cmd.Flags().BoolVar(&majors, "majors", false, "print only the supported PostgreSQL majors, as a JSON array")
	return cmd
}
