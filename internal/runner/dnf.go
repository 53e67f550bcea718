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
//
// Given the public key of a signed build (FindKey), dnf checks the
// signatures of the packages and of repomd.xml (gpgcheck=1,
// repo_gpgcheck=1), and the installed package must carry a signature by
// that key.
//
// The tree is the one of distro (an EL release) and the target's
// architecture, copied to where the build's own .repo form finds it
// (el$releasever.$basearch under one root) and dnf runs with
// --releasever set to distro's: so the proof also shows the .repo's
// templating and the tree's path right for that release.
func DNFInstall(ext model.Extension, repo string, key []byte, distro model.Distro) Installer {
	return func(ctx context.Context, t Target, stage func(string)) (func(context.Context) error, error) {
		root, l := t.Root(), t.Layout()
		arch, err := Output(ctx, root, "uname", "-m")
		if err != nil {
			return nil, err
		}
		tree := rpm.RepoDir(model.Packages.For(distro), strings.TrimSpace(string(arch)))
		if err := uploadTree(ctx, t, repo, path.Join(repoInContainer, tree)); err != nil {
			return nil, err
		}
		keyURL := ""
		if key != nil {
			if err := uploadFile(ctx, t, repoInContainer, ext.RPMKeyFile(), key); err != nil {
				return nil, err
			}
			keyURL = "file://" + path.Join(repoInContainer, ext.RPMKeyFile())
		}
		conf := rpm.RepoFile(ext.Name, ext.Name+" packages under test",
			"file://"+path.Join(repoInContainer, rpm.HostRepoDir(model.Packages)), keyURL)
		if err := uploadFile(ctx, t, "/etc/yum.repos.d", ext.RepoFile(), conf); err != nil {
			return nil, err
		}
		name := ext.PackageName(l.Major)
		stage("dnf --releasever=" + distro.Version + " install -y " + name + signedWord(key))
		if _, err := Output(ctx, root, "dnf", "--releasever="+distro.Version, "install", "-y", "--setopt=install_weak_deps=False", name); err != nil {
			return nil, err
		}
		if rel, err := Output(ctx, root, "rpm", "-q", "--qf", "%{RELEASE}", name); err != nil || !strings.HasSuffix(string(rel), distro.DistTag()) {
			return nil, fmt.Errorf("%s is installed with release %q, not %s's (%v)", name, rel, distro.DistTag(), err)
		}
		if key != nil {
			ids, err := KeyIDs(key)
			if err != nil {
				return nil, err
			}
			// the header signature, RSA or (any other algorithm) DSA tag
			sig, err := Output(ctx, root, "rpm", "-q", "--qf", "%|DSAHEADER?{%{DSAHEADER:pgpsig}}:{%{RSAHEADER:pgpsig}}|", name)
			if err != nil || !slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(string(sig), "Key ID "+id) }) {
				return nil, fmt.Errorf("%s is installed without a signature by the build's key %s: %q (%v)", name, ids[0], sig, err)
			}
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
