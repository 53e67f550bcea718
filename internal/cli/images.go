package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/model"
)

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
