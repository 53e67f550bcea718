package images

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/pglease/pglease-gen/internal/model"
)

// binfmtDir is where the kernel lists the registered binary formats.
const binfmtDir = "/proc/sys/fs/binfmt_misc"

// CheckEmulation makes sure this machine can run binaries of arch (Go's
// name): its own architecture always; another only when qemu's handler for
// it is registered with the kernel, enabled, and with the F flag (the
// interpreter opened at registration, so it works inside containers too).
func CheckEmulation(arch string) error { return checkEmulation(binfmtDir, arch) }

func checkEmulation(dir, arch string) error {
	if arch == runtime.GOARCH {
		return nil
	}
	name := "qemu-" + model.ELArch(arch)
	fix := fmt.Sprintf("install and register qemu's handlers: apt-get install qemu-user-static binfmt-support (make deps does), "+
		"then update-binfmts --enable %s (if %s is empty, first: mount -t binfmt_misc binfmt_misc %s)", name, dir, dir)
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("running %s binaries on this %s machine needs emulation, and no %s handler is registered: %s", arch, runtime.GOARCH, name, fix)
	}
	lines := strings.Split(string(b), "\n")
	if lines[0] != "enabled" {
		return fmt.Errorf("the %s handler in %s is %s: %s", name, dir, lines[0], fix)
	}
	for _, l := range lines {
		if flags, ok := strings.CutPrefix(l, "flags: "); ok && !strings.Contains(flags, "F") {
			return fmt.Errorf("the %s handler in %s lacks the F flag (flags %s), so containers cannot find its interpreter: "+
				"use Debian's qemu-user-static, which registers it with F (update-binfmts --enable %s)", name, dir, flags, name)
		}
	}
	return nil
}
