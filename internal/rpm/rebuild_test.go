package rpm_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/images"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/rpm"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// TestSourceRPMRebuildsAlone runs `rpmbuild --rebuild` on the source RPM
// of each major, with no --define, in that major's EL9 stand-in (as mock,
// copr or koji would), and compares the RPM it writes with the one the
// build wrote: name, version, release, architecture, requires, provides,
// the file list with modes, owners and digests, and the payload's member
// names. The stand-in is Debian's rpm, which has no %dist: the container
// is given EL9's /usr/lib/rpm/macros.d/macros.dist (%dist .el9), as an
// EL9 host's system-release package gives it. What the rebuilt RPM
// differs in by nature (build host and time, payload compression, the
// header fields of rpmbuild's own) is left out; docs/packaging.md lists
// them.
func TestSourceRPMRebuildsAlone(t *testing.T) {
	testenv.Tools(t, "rpm", "docker")
	testenv.Docker(t)
	el9, _ := model.DistroNamed("el9")
	files, _, err := rpm.Build(context.Background(), rpm.Options{Ext: model.PgLease, Pkg: model.Packages, Src: pglease.Files,
		Majors: model.PgLease.Majors, Distros: []model.Distro{el9}, Suffix: model.Packages.Suffixes[0], Builder: rpm.PureGo,
		Time: model.Packages.Released()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := render.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	for _, m := range el9.MajorsOf(model.PgLease.Majors) {
		t.Run(fmt.Sprint(m), func(t *testing.T) {
			srpms, _ := filepath.Glob(filepath.Join(dir, "SRPMS", model.PgLease.Name+fmt.Sprintf("_%d-*.src.rpm", m)))
			if len(srpms) != 1 {
				t.Fatalf("source RPMs of %d: %v", m, srpms)
			}
			out := filepath.Join(dir, fmt.Sprintf("rebuilt-%d", m))
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			script := "mkdir -p /usr/lib/rpm/macros.d && printf '%%dist .el9\\n%%el9 1\\n' > /usr/lib/rpm/macros.d/macros.dist && " +
				"rpmbuild --rebuild /in/" + filepath.Base(srpms[0]) + " && cp ~/rpmbuild/RPMS/noarch/*.rpm /out/"
			cmd := exec.Command("docker", "run", "--rm", "--network", "none",
				"-v", filepath.Dir(srpms[0])+":/in:ro", "-v", out+":/out", images.Ref(images.EL9Repository, m, "amd64"), "sh", "-ec", script)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("rpmbuild --rebuild %s: %v\n%s", filepath.Base(srpms[0]), err, b)
			}
			rebuilt, _ := filepath.Glob(filepath.Join(out, "*.rpm"))
			ours, _ := filepath.Glob(filepath.Join(dir, rpm.RepoDir(model.Packages.For(el9), "x86_64"), "*_"+fmt.Sprint(m)+"-*.rpm"))
			if len(rebuilt) != 1 || len(ours) != 1 {
				t.Fatalf("rebuilt %v, ours %v", rebuilt, ours)
			}
			if filepath.Base(rebuilt[0]) != filepath.Base(ours[0]) {
				t.Errorf("file names: rebuilt %s, ours %s", filepath.Base(rebuilt[0]), filepath.Base(ours[0]))
			}
			for _, q := range [][]string{
				{"--qf", "%{NAME} %{EPOCH} %{VERSION} %{RELEASE} %{ARCH} %{LICENSE} %{URL} %{SOURCERPM}\n"},
				{"--requires"},
				{"--provides"},
				{"--qf", "[%{FILENAMES} %{FILEMODES:octal} %{FILEUSERNAME} %{FILEGROUPNAME} %{FILEDIGESTS} %{FILEFLAGS:fflags}\n]"},
			} {
				a, b := withoutRpmlib(rpmQuery(t, rebuilt[0], q...)), withoutRpmlib(rpmQuery(t, ours[0], q...))
				if a != b {
					t.Errorf("rpm -qp %s:\nrebuilt:\n%s\nours:\n%s", strings.Join(q, " "), a, b)
				}
			}
			if a, b := members(t, rebuilt[0]), members(t, ours[0]); a != b {
				t.Errorf("payload members:\nrebuilt:\n%s\nours:\n%s", a, b)
			}
		})
	}
}

func rpmQuery(t *testing.T, file string, args ...string) string {
	t.Helper()
	out, err := exec.Command("rpm", append([]string{"-qp", "--nosignature", "--nodigest"}, append(args, file)...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("rpm -qp %v %s: %v\n%s", args, file, err, out)
	}
	return string(out)
}

// withoutRpmlib drops the rpmlib(...) requirements: they name the
// package format's features that the rpm writing it uses (the stand-in of
// 19 has a newer rpm than EL9's, with 64-bit sizes and zstd), not what the
// package needs.
func withoutRpmlib(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "rpmlib(") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// members are the payload's member names, in order (rpm2archive, which
// reads every payload format, then tar -t).
func members(t *testing.T, file string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "rpm2archive -n - < \"$1\" | tar -t", "sh", file).CombinedOutput()
	if err != nil {
		t.Fatalf("rpm2archive %s: %v\n%s", file, err, out)
	}
	return string(out)
}
