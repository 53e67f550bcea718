package cli

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestBuildStopsOnSignal runs the command line as a process of its own
// (the test binary, as TestMain allows) and sends it SIGINT, then
// SIGTERM, once the build has begun: it stops, exits 130 and 143, says
// so, keeps the output of the build before and leaves no staging (the
// pure-Go build ignored both, replaced the output and exited 0).
func TestBuildStopsOnSignal(t *testing.T) {
	dir := t.TempDir()
	cli := func(args ...string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "PGLEASE_GEN_AS_CLI=1")
		return cmd
	}
	out := filepath.Join(dir, "dist")
	if b, err := cli("build", "--out", out, "--pg", "17", "--distro", "el9").CombinedOutput(); err != nil {
		t.Fatalf("the first build: %v\n%s", err, b)
	}
	before, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		cmd := cli("build", "--out", out)
		stdout, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// the first progress line: the build has begun
		r := bufio.NewReader(stdout)
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatalf("%s: no progress line: %v\n%s", c.sig, err, stderr.String())
		}
		cmd.Process.Signal(c.sig)
		go func() { r.WriteTo(new(bytes.Buffer)) }()
		err := cmd.Wait()
		code := 0
		if e, ok := err.(*exec.ExitError); ok {
			code = e.ExitCode()
		}
		if code != c.code || !strings.Contains(stderr.String(), "stopped by "+c.sig.String()) {
			t.Errorf("%s: exit %d, %q; want %d and stopped by %s", c.sig, code, stderr.String(), c.code, c.sig)
		}
		if after, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS")); !bytes.Equal(before, after) {
			t.Errorf("%s: the output changed", c.sig)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".dist.new-*")); len(left) > 0 {
			t.Errorf("%s: staging left: %v", c.sig, left)
		}
	}
}
