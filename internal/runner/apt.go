package runner

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pglease/pglease-gen/internal/deb"
	"github.com/pglease/pglease-gen/internal/model"
)

// aptRepoInContainer is where the apt repository is copied.
const aptRepoInContainer = "/srv/pg_lease-apt"

// FindAptRepo accepts an apt repository (a directory with dists/) or the
// output of pglease-gen build, whose apt/ it picks.
func FindAptRepo(dir string, pkg model.Packaging) (string, error) {
	for _, d := range []string{dir, filepath.Join(dir, deb.RepoDir)} {
		if st, err := os.Stat(filepath.Join(d, "dists", pkg.DebCodename, "Release")); err == nil && !st.IsDir() {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s is not an apt repository (no dists/%s/Release in it or in %s/%s): run pglease-gen build first", dir, pkg.DebCodename, dir, deb.RepoDir)
}

// AptInstall is the installer of the deb install proof: it copies the apt
// repository into the container, adds it to apt's sources and runs
// `apt-get install -y postgresql-N-pg-lease`, which must pull in
// postgresql-N from the image's own repository. Its check, after the
// suites, runs `apt-get purge -y postgresql-N-pg-lease` and fails if the
// package or any of its files is still there.
//
// Given the public key of a signed build (FindKey), apt checks the
// repository's signature (Signed-By, no trusted=yes).
func AptInstall(ext model.Extension, pkg model.Packaging, repo string, key []byte) Installer {
	return func(ctx context.Context, t Target, stage func(string)) (func(context.Context) error, error) {
		root := t.Root()
		if err := uploadTree(ctx, t, repo, aptRepoInContainer); err != nil {
			return nil, err
		}
		sources := deb.Sources(pkg, ext.DebSource(), "file:"+aptRepoInContainer, key)
		if err := uploadFile(ctx, t, "/etc/apt/sources.list.d", ext.SourcesFile(), sources); err != nil {
			return nil, err
		}
		apt := func(ctx context.Context, args ...string) ([]byte, error) {
			argv := append([]string{"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-q", "-y",
				"-o", "Dpkg::Options::=--force-confold", "-o", "APT::Sandbox::User=root"}, args...)
			return Output(ctx, root, argv...)
		}
		name := ext.DebPackage(t.Layout().Major)
		stage("apt-get update")
		if _, err := apt(ctx, "update"); err != nil {
			return nil, err
		}
		stage("apt-get install -y " + name + signedWord(key))
		if _, err := apt(ctx, "install", "--no-install-recommends", name); err != nil {
			return nil, err
		}
		if _, err := Output(ctx, root, "dpkg-query", "-W", name, model.DebServerPackage(t.Layout().Major)); err != nil {
			return nil, fmt.Errorf("after apt-get install: %w", err)
		}
		out, err := Output(ctx, root, "dpkg-query", "-L", name)
		if err != nil {
			return nil, err
		}
		var files []string
		for _, f := range strings.Fields(string(out)) {
			if _, _, code, err := root.Run(ctx, []string{"test", "-f", f}); err == nil && code == 0 {
				files = append(files, f)
			}
		}
		want := path.Join(t.Layout().ExtensionDir(), ext.ControlFile())
		if !slices.Contains(files, want) {
			return nil, fmt.Errorf("%s does not install %s; it installs:\n%s", name, want, out)
		}
		return func(ctx context.Context) error {
			stage("apt-get purge -y " + name)
			if _, err := apt(ctx, "purge", name); err != nil {
				return err
			}
			if _, _, code, err := root.Run(ctx, []string{"dpkg-query", "-W", "-f", "${db:Status-Status}", name}); err == nil && code == 0 {
				st, _ := Output(ctx, root, "dpkg-query", "-W", "-f", "${db:Status-Status}", name)
				if s := strings.TrimSpace(string(st)); s != "not-installed" && s != "" {
					return fmt.Errorf("%s is %s after apt-get purge", name, s)
				}
			}
			return noneLeft(ctx, root, "apt-get purge", files)
		}, nil
	}
}
