package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/pglease/pglease-gen/internal/docker"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/rpm"
	"github.com/pglease/pglease-gen/internal/suite"
)

// repoInContainer is where the package repository is copied.
const repoInContainer = "/srv/pg_lease"

// RepoArch is the EL architecture of this machine, as in el9.x86_64.
func RepoArch() string { return model.ELArch(runtime.GOARCH) }

// FindRepo accepts a repository directory (one holding repodata/) or the
// output of pglease-gen build, in which it picks the tree of this machine's
// architecture.
func FindRepo(dir string, pkg model.Packaging) (string, error) {
	tree := rpm.RepoDir(pkg, RepoArch())
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

// tarDir packs the directory dir (its contents, not dir itself).
func tarDir(dir string) ([]byte, error) {
	var tb docker.Tar
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() {
			return tb.Dir(filepath.ToSlash(rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return tb.File(filepath.ToSlash(rel), 0o644, b)
	})
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	return tb.Bytes()
}

// uploadFile writes one file into dir on the target, making dir.
func uploadFile(ctx context.Context, t Target, dir, name string, body []byte) error {
	var tb docker.Tar
	if err := tb.File(name, 0o644, body); err != nil {
		return err
	}
	b, err := tb.Bytes()
	if err != nil {
		return err
	}
	if err := Must(ctx, t.Root(), "mkdir", "-p", dir); err != nil {
		return err
	}
	return t.Upload(ctx, dir, b)
}

// noneLeft fails when any of files still exists on the target after what
// removed the package.
func noneLeft(ctx context.Context, root suite.Executor, what string, files []string) error {
	var left []string
	for _, f := range files {
		if _, _, code, err := root.Run(ctx, []string{"test", "-e", f}); err != nil {
			return err
		} else if code == 0 {
			left = append(left, f)
		}
	}
	if len(left) > 0 {
		return errors.New(what + " left files behind: " + strings.Join(left, " "))
	}
	return nil
}
