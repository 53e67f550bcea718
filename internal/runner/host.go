package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/pglease/pglease-gen/internal/layout"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/render"
	"github.com/pglease/pglease-gen/internal/suite"
)

// Host is this machine as a target: the PostgreSQL installation that
// pg_config names, a private temporary work directory, and, as root, the
// "postgres" user for the server (PostgreSQL refuses to run as root).
type Host struct {
	inst pgserver.Install
	work string
	cred *syscall.Credential // nil: the server runs as the current user
	uid  int
	gid  int
}

// NewHost makes the target of a local installation. Close removes its
// work directory.
func NewHost(inst pgserver.Install) (*Host, error) {
	h := &Host{inst: inst, uid: -1, gid: -1}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("run the server as root: %w: create a postgres user or run as a normal user", err)
		}
		h.uid, _ = strconv.Atoi(u.Uid)
		h.gid, _ = strconv.Atoi(u.Gid)
		h.cred = &syscall.Credential{Uid: uint32(h.uid), Gid: uint32(h.gid)}
	}
	work, err := os.MkdirTemp("", "pglease-test-")
	if err != nil {
		return nil, err
	}
	h.work = work
	return h, nil
}

// Close removes the work directory.
func (h *Host) Close() error { return os.RemoveAll(h.work) }

func (h *Host) Layout() layout.Layout  { return h.inst.Layout() }
func (h *Host) Root() suite.Executor   { return hostExec{} }
func (h *Host) Server() suite.Executor { return hostExec{cred: h.cred} }
func (h *Host) User() string           { return pgserver.BootstrapUser }
func (h *Host) WorkDir() string        { return h.work }
func (h *Host) Upload(_ context.Context, dir string, archive []byte) error {
	return Untar(bytes.NewReader(archive), dir, nil)
}

func (h *Host) Own(_ context.Context, dir string) error {
	if h.cred == nil {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, h.uid, h.gid)
	})
}

func (h *Host) Download(_ context.Context, src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// Untar extracts a tar stream of directories and regular files into dir,
// each entry named by rename (nil keeps the names); it refuses entries that
// would land outside dir and entries of other types.
func Untar(r io.Reader, dir string, rename func(string) string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("extract into %s: %w", dir, err)
		}
		name := h.Name
		if rename != nil {
			name = rename(name)
		}
		target, err := Within(dir, name)
		if err != nil {
			return fmt.Errorf("extract into %s: %w", dir, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
				var b []byte
				// renamed into place: a server of another test may be
				// reading the file (an extension directory is shared by
				// every test on this machine's PostgreSQL, and a script
				// rewritten in place was once read empty by another
				// package's ALTER EXTENSION UPDATE)
				if b, err = io.ReadAll(tr); err == nil {
					err = render.WriteAtomic(target, b, fs.FileMode(h.Mode)&0o777|0o600)
				}
			}
		default:
			err = fmt.Errorf("%s is neither a file nor a directory", h.Name)
		}
		if err != nil {
			return fmt.Errorf("extract into %s: %w", dir, err)
		}
	}
}

// hostExec runs programs on this machine, as cred's user when set.
type hostExec struct{ cred *syscall.Credential }

func (e hostExec) Run(ctx context.Context, argv []string) ([]byte, []byte, int, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Dir = "/"
	if e.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
	}
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return stdout.Bytes(), stderr.Bytes(), ee.ExitCode(), nil
	}
	if err != nil {
		return stdout.Bytes(), stderr.Bytes(), -1, err
	}
	return stdout.Bytes(), stderr.Bytes(), 0, nil
}

func (hostExec) ReadFile(_ context.Context, path string) ([]byte, error) { return os.ReadFile(path) }
