package cli

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/model"
)

type imagesCmd struct {
	pg, cache, arch string
	debBuild        bool
}

func newImages() *cobra.Command {
	c := &imagesCmd{}
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build local stand-ins for the official postgres:N images",
		Long: "Build " + images.Repository + ":N, " + images.EL9Repository + ":N and " + images.DebianRepository + ":N for each major\n" +
			"from Debian root file systems (debootstrap, as root), Debian's own server\n" +
			"packages where Debian ships the major and the pinned PostgreSQL server builds\n" +
			"of the npm registry otherwise, with the official images' layout. Images whose\n" +
			"recipe has not changed are left alone. Use them with: pglease-gen test --image " + images.Repository + "\n\n" +
			"--arch arm64 builds the arm64 twins, tagged N-arm64, under qemu's emulation\n" +
			"(slow: several minutes per root file system). No arm64 build of PostgreSQL 14\n" +
			"exists here: --pg all leaves it out and says so; --pg 14 is an error.\n\n" +
			"--deb-build also builds " + images.DebianBuildRepository + ":N for each major Debian ships: that\n" +
			"release with the source package's build dependencies installed, where a plain\n" +
			"dpkg-buildpackage -b -us -uc builds and tests the tarball's debian/ (make deb-build).",
		Example: "  pglease-gen images --pg all\n  pglease-gen images --pg 16 --arch aarch64\n  pglease-gen images --pg 17,18,19 --deb-build",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			arch, err := model.ParseArch(c.arch)
			if err != nil {
				return err
			}
			majors, err := model.PgLease.ParseMajors(c.pg)
			if err != nil {
				return err
			}
			majors, missing, err := images.Buildable(majors, arch, strings.TrimSpace(c.pg) == "all")
			if err != nil {
				return err
			}
			if c.debBuild && strings.TrimSpace(c.pg) != "all" {
				for _, m := range majors {
					if !images.DebianShips(m) {
						return fmt.Errorf("--deb-build: Debian ships no PostgreSQL %d, so it has no build image; name majors Debian ships: %v", m, images.DebianMajors())
					}
				}
			}
			for _, m := range missing {
				fmt.Fprintf(cmd.OutOrStdout(), "skipping PostgreSQL %d for %s: %v\n", m.Major, arch, m.Why)
			}
			pool, err := docker.Connect()
			if err != nil {
				return err
			}
			return images.Build(cmd.Context(), pool.Client, images.Options{
				Majors: majors, Arch: arch, CacheDir: c.cache, Mirror: os.Getenv("PGLEASE_DEBIAN_MIRROR"), Progress: cmd.OutOrStdout(),
				DebBuild: c.debBuild,
			})
		},
	}
	cmd.Flags().StringVar(&c.pg, "pg", "all", "majors to build: 17, 14,16 or all")
	cmd.Flags().StringVar(&c.arch, "arch", runtime.GOARCH, "architecture: amd64 (x86_64) or arm64 (aarch64)")
	cmd.Flags().BoolVar(&c.debBuild, "deb-build", false, "also build "+images.DebianBuildRepository+":N for the majors Debian ships (the build dependencies installed)")
	cmd.Flags().StringVar(&c.cache, "cache", "", "download cache (default: the user cache dir, pglease-gen)")
	return cmd
}
