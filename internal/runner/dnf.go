package runner

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/rpm"
)

// repoInContainer is where the package repository is copied.
const repoInContainer = "/srv/pg_lease"

// FindRepo accepts a repository directory (one holding repodata/) or the
// output of pglease-gen build, in which it picks the tree of arch (Go's
// name, as in el9.aarch64 for arm64).
func FindRepo(dir string, pkg model.Packaging, arch string) (string, error) {
	tree := rpm.RepoDir(pkg, model.ELArch(arch))
	for _, d := range []string{dir, filepath.Join(dir, tree)} {
		if st, err := os.Stat(filepath.Join(d, "repodata", "repomd.xml")); err == nil && !st.IsDir() {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s is not a package repository (no repodata/repomd.xml in it or in %s/%s): run pglease-gen build first", dir, dir, tree)
}

// DNFInstall is the Installer of the RPM install proof: it copies the
// repository into the container, adds it to dnf's repositories and runs
// `dnf install -y pg_lease_N`, which must pull in postgresqlN-server from
// the image's own repositories. Its check, after the suites, runs
// `dnf remove -y pg_lease_N` and fails if the package or any of its files
// is still there.
func DNFInstall(ext model.Extension, repo string) Installer {
	return func(ctx context.Context, t Target, stage func(string)) (func(context.Context) error, error) {
		root, l := t.Root(), t.Layout()
		archive, err := tarDir(repo)
		if err != nil {
			return nil, err
		}
		if err := Must(ctx, root, "mkdir", "-p", repoInContainer); err != nil {
			return nil, err
		}
		if err := t.Upload(ctx, repoInContainer, archive); err != nil {
			return nil, err
		}
		conf := fmt.Sprintf("[pg_lease]\nname=pg_lease packages under test\nbaseurl=file://%s\nenabled=1\ngpgcheck=0\n", repoInContainer)
		if err := uploadFile(ctx, t, "/etc/yum.repos.d", "pg_lease.repo", []byte(conf)); err != nil {
			return nil, err
		}
		name := ext.PackageName(l.Major)
		stage("dnf install -y " + name)
		if _, err := Output(ctx, root, "dnf", "install", "-y", "--setopt=install_weak_deps=False", name); err != nil {
			return nil, err
		}
		if _, err := Output(ctx, root, "rpm", "-q", name, model.ServerPackage(l.Major)); err != nil {
			return nil, fmt.Errorf("after dnf install: %w", err)
		}
		out, err := Output(ctx, root, "rpm", "-ql", name)
		if err != nil {
			return nil, err
		}
		files := strings.Fields(string(out))
		want := path.Join(l.ExtensionDir(), ext.ControlFile())
		if !slices.Contains(files, want) {
			return nil, fmt.Errorf("%s does not install %s; it installs:\n%s", name, want, out)
		}
		return func(ctx context.Context) error {
			stage("dnf remove -y " + name)
			if _, err := Output(ctx, root, "dnf", "remove", "-y", name); err != nil {
				return err
			}
			if _, _, code, err := root.Run(ctx, []string{"rpm", "-q", name}); err != nil || code == 0 {
				return fmt.Errorf("%s is still installed after dnf remove (%v)", name, err)
			}
			return noneLeft(ctx, root, "dnf remove", files)
		}, nil
	}
}
