package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/model"
)

// TestEmptyValuesAreErrors: a flag given with an empty value (or release
// 0) is an error naming the flag, not the default, and writes nothing.
func TestEmptyValuesAreErrors(t *testing.T) {
	// a bad repo_url in a file is blamed on its line, not on --repo-url
	urlFile := filepath.Join(t.TempDir(), "acme.yaml")
	if err := os.WriteFile(urlFile, []byte("vendor: ACME\nrepo_url: http://x/$basearch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--distro", ""}, "--distro '': use all or some of"},
		{[]string{"--config", ""}, "--config '': name a settings file"},
		{[]string{"--release-suffix", ""}, "--release-suffix '': give a value"},
		{[]string{"--maintainer", ""}, "--maintainer '': give a value"},
		{[]string{"--release", "0"}, "--release 0: a whole number from 1 to 999"},
		{[]string{"--maintainer", "%(id) <a@b.example>"}, `--maintainer: maintainer "%(id) <a@b.example>": holds "%"`},
		{[]string{"--out", ""}, "--out '': name a directory"},
		{[]string{"--into", ""}, "--into '': name a directory"},
		{[]string{"--changelog", ""}, "--changelog '': name the changelog file"},
		{[]string{"--repo-url", "http://x/ y", "--allow-unsigned"}, `--repo-url: repository URL "http://x/ y": holds " "`},
		{[]string{"--config", urlFile}, urlFile + `:2: repository URL "http://x/$basearch": holds "$"`},
	} {
		out := filepath.Join(t.TempDir(), "dist")
		code, _, errs := run(t, append([]string{"build", "--out", out}, tc.args...)...)
		if code == ExitOK || !strings.Contains(errs, tc.want) {
			t.Errorf("build %q: exit %d, %q; want %q", tc.args, code, errs, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("build %q wrote %s", tc.args, out)
		}
	}
	code, _, errs := run(t, "test", "--pg", "15", "--rpm", t.TempDir(), "--distro", "")
	if code == ExitOK || !strings.Contains(errs, "--distro '': name a release") {
		t.Errorf("test --distro '': exit %d, %q", code, errs)
	}
}

// afterEL9 is the completion of --distro el9, from the model: every
// other distribution.
func afterEL9() string {
	var b strings.Builder
	for _, n := range model.Names(model.Distros) {
		if n != "el9" {
			b.WriteString("el9," + n + "\n")
		}
	}
	return b.String() + ":6\n"
}

// TestFlagCompletion: the shell completion offers the model's values for
// --pg, --distro, --builder and --arch, after a comma the rest of a list
// (never all or go, which stand alone: el9,all was offered and refused).
func TestFlagCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--pg", "14,1"}, "14,15\n14,16\n14,17\n14,18\n14,19\n:6\n"},
		{[]string{"test", "--distro", "b"}, "bookworm\n:6\n"},
		{[]string{"build", "--builder", "go,r"}, ":6\n"},
		{[]string{"build", "--builder", "rpmbuild,"}, "rpmbuild,dpkg\n:6\n"},
		{[]string{"build", "--distro", "el9,"}, afterEL9()},
		{[]string{"build", "--distro", "all,"}, ":6\n"},
		{[]string{"images", "--arch", ""}, "amd64\narm64\n:4\n"},
	} {
		code, out, errs := run(t, append([]string{"__complete"}, tc.args...)...)
		if code != ExitOK || out != tc.want {
			t.Errorf("complete %q: exit %d, %q (%s); want %q", tc.args, code, out, errs, tc.want)
		}
	}
}

// TestUpstreamIsTheSameForEveryPackager builds with the defaults, then with
// every packager setting changed and another SOURCE_DATE_EPOCH: the source
// tarball (Source0), Debian's orig tarball and the PGXN zip are the same
// bytes and carry no debian/. Before they were upstream's alone,
// META.json, five debian/ files and every member's date changed with the
// packager.
func TestUpstreamIsTheSameForEveryPackager(t *testing.T) {
	acme := filepath.Join(t.TempDir(), "acme.yaml")
	if err := os.WriteFile(acme, []byte("vendor: ACME\nmaintainer: ACME packaging <packages@acme.example>\nrelease: 2\nrelease_date: 2026-12-05\n"+
		"release_note: Rebuilt for ACME\nhomepage: https://acme.example/pg_lease\nsource_url: https://downloads.acme.example/pg_lease\n"+
		"repo_url: https://packages.acme.example/pg_lease\nimage_repository: registry.acme.example/pg_lease\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	orig := "apt/pool/main/p/" + model.PgLease.DebSource() + "/" + model.PgLease.DebSource() + "_" + model.PgLease.Version() + ".orig.tar.gz"
	upstream := []string{model.PgLease.Tarball(), model.PgLease.PGXNZip(), orig}
	sums := map[string][2]string{}
	for i, args := range [][]string{nil, {"--config", acme, "--allow-unsigned"}} {
		if i == 1 {
			t.Setenv("SOURCE_DATE_EPOCH", "1796256000") // 2026-12-03
		}
		out := filepath.Join(t.TempDir(), "dist")
		code, _, errs := run(t, append([]string{"build", "--out", out, "--pg", "17", "--distro", "el9,bookworm"}, args...)...)
		if code != ExitOK {
			t.Fatalf("build %q: exit %d\n%s", args, code, errs)
		}
		for _, name := range upstream {
			b, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			s := sums[name]
			s[i] = hex.EncodeToString(sum[:])
			sums[name] = s
		}
		if i == 0 {
			b, _ := os.ReadFile(filepath.Join(out, model.PgLease.Tarball()))
			members := tarMembers(t, b)
			if slices.ContainsFunc(members, func(m string) bool { return strings.Contains(m, "/debian/") }) {
				t.Errorf("the upstream tarball carries debian/: %v", members)
			}
		}
	}
	for name, s := range sums {
		if s[0] != s[1] {
			t.Errorf("%s differs with the packager's settings: %s, %s", name, s[0], s[1])
		} else {
			t.Logf("%s: sha256 %s for both builds", name, s[0])
		}
	}
	if sums[model.PgLease.Tarball()] != sums[orig] {
		t.Errorf("Debian's orig is not the upstream tarball")
	}
}

func tarMembers(t *testing.T, tgz []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}
