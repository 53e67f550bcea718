package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pglease/pglease-gen/internal/model"
)

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tool's version and what it builds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e := model.PgLease
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "pglease-gen %s: %s %s for PostgreSQL %s\n", Version, e.Name, e.Version(), e.MajorList())
			return err
		},
	}
}
