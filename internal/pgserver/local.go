// Package pgserver starts throwaway PostgreSQL servers for the Go tests, the
// stress test, the fault tests and the bench: from an installation (found
// through pg_config, or unpacked), on a unix socket in a private temporary
// directory, removed when stopped. It gives the fault tests what they do to
// servers (standbys, promotion, kill -9, cut replication, base backups,
// dumps and restores) and runs PgBouncer in front of one.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pglease/pglease-gen/internal/layout"
)

// Install describes a local PostgreSQL installation.
type Install struct {
	PgConfig string
	BinDir   string
	ShareDir string
	PGXS     string // path of pgxs.mk
	Major    int
}

// ExtensionDir is where CREATE EXTENSION looks for control and script files.
func (i Install) ExtensionDir() string { return filepath.Join(i.ShareDir, "extension") }

// Layout is the installation's layout, as pg_config reports it.
func (i Install) Layout() layout.Layout {
	return layout.Layout{
		Name: "local", Major: i.Major, BinDir: i.BinDir, ShareDir: i.ShareDir,
		// pgxs.mk is PGXSDir/src/makefiles/pgxs.mk
		PGXSDir: filepath.Dir(filepath.Dir(filepath.Dir(i.PGXS))),
	}
}

// InstallOf is the installation of a layout, for a build without
// pg_config (the npm registry's): its binaries and share directory.
func InstallOf(l layout.Layout) Install {
	return Install{BinDir: l.BinDir, ShareDir: l.ShareDir, Major: l.Major}
}

// BootstrapUser is the superuser every throwaway cluster is made with.
const BootstrapUser = "postgres"

// FindInstall asks pg_config (a path, or a name looked up on PATH) where the
// installation is.
func FindInstall(ctx context.Context, pgConfig string) (Install, error) {
	if pgConfig == "" {
		pgConfig = "pg_config"
	}
	path, err := exec.LookPath(pgConfig)
	if err != nil {
		return Install{}, fmt.Errorf("find pg_config: %w: install PostgreSQL (on Debian: apt-get install postgresql-15) or pass --pg-config", err)
	}
	out, err := exec.CommandContext(ctx, path, "--bindir", "--sharedir", "--pgxs", "--version").Output()
	if err != nil {
		return Install{}, fmt.Errorf("run %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 {
		return Install{}, fmt.Errorf("run %s: unexpected output %q", path, out)
	}
	major, err := ParseMajor(lines[3])
	if err != nil {
		return Install{}, fmt.Errorf("run %s: %w", path, err)
	}
	return Install{PgConfig: path, BinDir: lines[0], ShareDir: lines[1], PGXS: lines[2], Major: major}, nil
}

// ParseMajor reads the major version from "PostgreSQL 15.18 (Debian ...)".
func ParseMajor(version string) (int, error) {
	f := strings.Fields(version)
	if len(f) < 2 || f[0] != "PostgreSQL" {
		return 0, fmt.Errorf("cannot read a PostgreSQL version from %q", version)
	}
	num := f[1]
	if i := strings.IndexFunc(num, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		num = num[:i]
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return 0, fmt.Errorf("cannot read a PostgreSQL version from %q", version)
	}
	return n, nil
}

// Server is a running throwaway server.
type Server struct {
	Install  Install
	Dir      string // holds the data directory, the socket and the log
	Port     int
	User     string // the bootstrap superuser
	cred     *syscall.Credential
	settings []string
}

// Socket is the directory holding the server's unix socket (libpq's host).
func (s *Server) Socket() string { return s.Dir }

// DSN is a libpq connection string for database db as the superuser.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", s.Dir, s.Port, s.User, db)
}

// Start initialises a cluster in a new directory under parent (os.TempDir()
// when empty) and starts it listening only on a unix socket. As root, the
// server runs as the "postgres" user, since PostgreSQL refuses to run as root.
func Start(ctx context.Context, inst Install, parent string) (*Server, error) {
	return StartWith(ctx, inst, parent)
}

// StartWith is Start with server settings ("name=value", e.g. fsync=on)
// that override the defaults.
func StartWith(ctx context.Context, inst Install, parent string, settings ...string) (*Server, error) {
	dir, err := os.MkdirTemp(parent, "pglease-pg-")
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	s := &Server{Install: inst, Dir: dir, Port: 5432, User: BootstrapUser}
	if os.Geteuid() == 0 {
		if s.cred, err = lookupPostgres(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("start server: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := s.run(ctx, "initdb", InitdbArgs(data, s.User)...); err != nil {
		s.remove()
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	s.settings = settings
	if out, err := s.run(ctx, "pg_ctl", PgCtlStartArgs(data, dir, s.Port, filepath.Join(dir, "server.log"), settings...)...); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		s.remove()
		return nil, fmt.Errorf("pg_ctl start: %w\n%s%s", err, out, log)
	}
	return s, nil
}

// lookupPostgres is the "postgres" user, whom servers run as when the
// tests run as root (PostgreSQL refuses to run as root).
func lookupPostgres() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("start server as root: %w: create a postgres user or run as a normal user", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// InitdbArgs are initdb's arguments for a throwaway cluster in data whose
// bootstrap superuser is user, trusted on the local socket.
func InitdbArgs(data, user string) []string {
	return []string{"-D", data, "-U", user, "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"}
}

// PgCtlStartArgs are pg_ctl's arguments to start the cluster in data
// listening on no TCP address, only on a unix socket in socketDir.
// Each of settings ("name=value") is passed on as -c and overrides these.
func PgCtlStartArgs(data, socketDir string, port int, logFile string, settings ...string) []string {
	opts := fmt.Sprintf("-c listen_addresses='' -k %s -p %d -c fsync=off -c max_connections=50", socketDir, port)
	for _, s := range settings {
		opts += " -c " + s
	}
	return []string{"-D", data, "-o", opts, "-l", logFile, "-w", "-t", "60", "start"}
}

// Crash stops the server as a crash would (pg_ctl stop -m immediate: no
// checkpoint, recovery at the next start) and keeps its files.
func (s *Server) Crash(ctx context.Context) error {
	if out, err := s.run(ctx, "pg_ctl", "-D", filepath.Join(s.Dir, "data"), "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop -m immediate: %w\n%s", err, out)
	}
	return nil
}

// Restart starts a stopped server again on the same files.
func (s *Server) Restart(ctx context.Context) error {
	if out, err := s.run(ctx, "pg_ctl", PgCtlStartArgs(filepath.Join(s.Dir, "data"), s.Dir, s.Port, filepath.Join(s.Dir, "server.log"), s.settings...)...); err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s%s", err, out, s.Log())
	}
	return nil
}

// Stop stops the server immediately and removes its directory.
func (s *Server) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := s.run(ctx, "pg_ctl", "-D", filepath.Join(s.Dir, "data"), "-m", "immediate", "-w", "stop")
	rmErr := s.remove()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	return rmErr
}

func (s *Server) remove() error { return os.RemoveAll(s.Dir) }

// Log returns the server log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
	return string(b)
}

func (s *Server) run(ctx context.Context, prog string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.Install.BinDir, prog), args...)
	cmd.Dir = s.Dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out, fmt.Errorf("%s exited with %d", prog, ee.ExitCode())
	}
	return out, err
}
