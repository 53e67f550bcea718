package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// The parts of a server's life the fault tests need: standbys, promotion,
// kill -9, a cut replication link, a paused WAL writer, base backups and
// dumps. Every server here
// listens on a unix socket in its own directory only.

// Data is the server's data directory.
func (s *Server) Data() string { return filepath.Join(s.Dir, "data") }

// newDir makes a directory for another server of the same installation
// under parent, owned by the server's user.
func (s *Server) newDir(parent string) (*Server, error) {
	dir, err := os.MkdirTemp(parent, "pglease-pg-")
	if err != nil {
		return nil, err
	}
	n := &Server{Install: s.Install, Dir: dir, Port: s.Port, User: s.User, cred: s.cred, settings: s.settings}
	if n.cred != nil {
		if err := os.Chown(dir, int(n.cred.Uid), int(n.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	return n, nil
}

// writeConf appends lines to the data directory's postgresql.auto.conf
// and writes the named empty signal files.
func (s *Server) writeConf(lines []string, signals ...string) error {
	f, err := os.OpenFile(filepath.Join(s.Data(), "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Fprintln(f, l)
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, sig := range signals {
		if err := os.WriteFile(filepath.Join(s.Data(), sig), nil, 0o600); err != nil {
			return err
		}
	}
	return s.own(s.Data())
}

// own gives a tree to the server's user.
func (s *Server) own(root string) error {
	if s.cred == nil {
		return nil
	}
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(s.cred.Uid), int(s.cred.Gid))
	})
}

// BaseBackup copies the running server with pg_basebackup (its WAL
// streamed alongside) into a new server directory under parent, not
// started.
//
// An installation without pg_basebackup (the npm registry's builds) gets
// a cold copy instead: s stops cleanly, its data directory is copied, and
// it starts again.
func (s *Server) BaseBackup(ctx context.Context, parent string) (*Server, error) {
	if _, err := os.Stat(filepath.Join(s.Install.BinDir, "pg_basebackup")); err != nil {
		return s.coldCopy(ctx, parent)
	}
	n, err := s.newDir(parent)
	if err != nil {
		return nil, err
	}
	if out, err := n.run(ctx, "pg_basebackup", "-D", n.Data(), "-h", s.Dir, "-p", strconv.Itoa(s.Port), "-U", s.User,
		"-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		n.remove()
		return nil, fmt.Errorf("pg_basebackup: %w\n%s", err, out)
	}
	// the copy starts with its own settings and log, none of the source's
	// standby or archive files
	os.Remove(filepath.Join(n.Data(), "postmaster.pid"))
	return n, nil
}

// StartStandby makes a streaming standby of s under parent, named
// (application_name) name, and starts it.
func (s *Server) StartStandby(ctx context.Context, parent, name string) (*Server, error) {
	n, err := s.BaseBackup(ctx, parent)
	if err != nil {
		return nil, err
	}
	conninfo := fmt.Sprintf("host=%s port=%d user=%s application_name=%s", s.Dir, s.Port, s.User, name)
	if err := n.writeConf([]string{"primary_conninfo = '" + conninfo + "'"}, "standby.signal"); err != nil {
		n.remove()
		return nil, err
	}
	if err := n.Restart(ctx); err != nil {
		n.remove()
		return nil, err
	}
	return n, nil
}

// StartRecovered starts a base backup as a new primary: with archive
// recovery from archive (a directory of WAL files) it ends on a new
// timeline; without (archive ""), it starts as after a crash, on the
// backup's own timeline.
func (s *Server) StartRecovered(ctx context.Context, archive string) error {
	if archive == "" {
		return s.startRecovered(ctx, nil)
	}
	return s.startRecovered(ctx, []string{"restore_command = 'cp " + archive + "/%f %p'", "recovery_target_timeline = 'latest'"})
}

// StartRecoveredTo starts a base backup as a new primary by
// point-in-time recovery: archive recovery from archive up to the restore
// point named target (pg_create_restore_point) on the backup's own
// timeline, then promotion, which begins the timeline after the newest
// whose history file the archive holds.
func (s *Server) StartRecoveredTo(ctx context.Context, archive, target string) error {
	return s.startRecovered(ctx, []string{"restore_command = 'cp " + archive + "/%f %p'", "recovery_target_timeline = 'current'",
		"recovery_target_name = '" + target + "'", "recovery_target_action = 'promote'"})
}

func (s *Server) startRecovered(ctx context.Context, recovery []string) error {
	if recovery != nil {
		if err := s.writeConf(recovery, "recovery.signal"); err != nil {
			return err
		}
	}
	if err := s.Restart(ctx); err != nil {
		return err
	}
	return s.waitPrimary(ctx)
}

// ResetWAL runs pg_resetwal -f on a server that is down (killed): the
// operator's last resort when its WAL cannot be replayed. What had not
// reached the data files by the last checkpoint is gone, and the server
// starts without recovery, as after a clean shutdown.
func (s *Server) ResetWAL(ctx context.Context) error {
	os.Remove(filepath.Join(s.Data(), "postmaster.pid")) // pg_resetwal refuses while it is there
	if out, err := s.run(ctx, "pg_resetwal", "-f", s.Data()); err != nil {
		return fmt.Errorf("pg_resetwal: %w\n%s", err, out)
	}
	return nil
}

// coldCopy is BaseBackup without pg_basebackup: a copy of the data
// directory while s is stopped.
func (s *Server) coldCopy(ctx context.Context, parent string) (*Server, error) {
	n, err := s.newDir(parent)
	if err != nil {
		return nil, err
	}
	if out, err := s.run(ctx, "pg_ctl", "-D", s.Data(), "-m", "fast", "-w", "stop"); err != nil {
		n.remove()
		return nil, fmt.Errorf("pg_ctl stop for a cold copy: %w\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, "cp", "-a", s.Data(), n.Data()).CombinedOutput()
	if err == nil {
		err = n.own(n.Data())
	}
	if rerr := s.Restart(ctx); err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		n.remove()
		return nil, fmt.Errorf("cold copy of %s: %w\n%s", s.Data(), err, out)
	}
	os.Remove(filepath.Join(n.Data(), "postmaster.pid"))
	return n, nil
}

// Promote promotes a standby and waits until it takes writes.
func (s *Server) Promote(ctx context.Context) error {
	if out, err := s.run(ctx, "pg_ctl", "-D", s.Data(), "-w", "-t", "60", "promote"); err != nil {
		return fmt.Errorf("pg_ctl promote: %w\n%s%s", err, out, s.Log())
	}
	return s.waitPrimary(ctx)
}

func (s *Server) waitPrimary(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			var rec bool
			err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&rec)
			conn.Close(ctx)
			if err == nil && !rec {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server in %s did not take writes within 60 s (%v)\n%s", s.Dir, err, s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill kills the postmaster and every process it started with SIGKILL,
// all at once, as the kernel's OOM killer or a power cut would leave
// them: nothing is written after the signal.
func (s *Server) Kill() error {
	b, err := os.ReadFile(filepath.Join(s.Data(), "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return fmt.Errorf("kill: postmaster.pid: %w", err)
	}
	pids := append(children(pm), pm)
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGSTOP) // freeze all first: none acts on another's death
	}
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
	for _, p := range pids {
		for i := 0; i < 200 && syscall.Kill(p, 0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// children are the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after the last ')'
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// CutReplication stops a standby's replication, as a network partition
// would: its primary_conninfo names no server any more (reloaded, so the
// walreceiver restarts and cannot connect); it goes on as a standby with
// what it received, and a synchronous primary waits for it.
func (s *Server) CutReplication(ctx context.Context) error {
	if err := Exec(ctx, s.DSN("postgres"), "ALTER SYSTEM SET primary_conninfo = 'host=/nonexistent-pglease-partition'",
		"SELECT pg_reload_conf()"); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for i := 0; i < 200; i++ {
		var streaming bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_stat_wal_receiver WHERE status = 'streaming')").Scan(&streaming); err != nil {
			return err
		}
		if !streaming {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("the standby in %s still streams after its primary_conninfo was cut", s.Dir)
}

// PauseWALWriter stops (SIGSTOP) the server's WAL writer, so that the
// commits made at synchronous_commit = off from now on stay unflushed
// (and unsent to standbys) until it goes on or the server dies: a fault
// test's way to widen the window such commits are lost in. It returns
// the WAL writer's process ID.
func (s *Server) PauseWALWriter(ctx context.Context) (int, error) {
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	// (a server that has just restarted accepts connections a moment
	// before its WAL writer shows in pg_stat_activity)
	var pid int
	for until := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := conn.QueryRow(ctx, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'").Scan(&pid)
		if err == nil {
			break
		}
		if !errors.Is(err, pgx.ErrNoRows) || time.Now().After(until) {
			return 0, fmt.Errorf("no WAL writer in %s: %w", s.Dir, err)
		}
	}
	return pid, syscall.Kill(pid, syscall.SIGSTOP)
}

// Dump is pg_dump of database db in the custom format, into file.
func (s *Server) Dump(ctx context.Context, db, file string) error {
	return s.DumpAs(ctx, s.User, db, file)
}

// DumpAs is Dump run as role user.
func (s *Server) DumpAs(ctx context.Context, user, db, file string) error {
	if out, err := s.run(ctx, "pg_dump", "-h", s.Dir, "-p", strconv.Itoa(s.Port), "-U", user, "-Fc", "-f", file, db); err != nil {
		return fmt.Errorf("pg_dump: %w\n%s", err, out)
	}
	return nil
}

// Restore creates database db and restores a custom-format dump into it.
func (s *Server) Restore(ctx context.Context, db, file string) error {
	if err := Exec(ctx, s.DSN("postgres"), "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		return err
	}
	return s.RestoreAs(ctx, s.User, db, file)
}

// RestoreAs restores a custom-format dump into database db, which exists,
// as role user, stopping at the first error.
func (s *Server) RestoreAs(ctx context.Context, user, db, file string) error {
	if out, err := s.run(ctx, "pg_restore", "-h", s.Dir, "-p", strconv.Itoa(s.Port), "-U", user, "-d", db, "--exit-on-error", file); err != nil {
		return fmt.Errorf("pg_restore: %w\n%s", err, out)
	}
	return nil
}

// RestoreTableData restores the rows of one table (pg_restore --data-only
// -t table) from a custom-format dump into database db, which exists.
func (s *Server) RestoreTableData(ctx context.Context, db, file, table string) error {
	if out, err := s.run(ctx, "pg_restore", "-h", s.Dir, "-p", strconv.Itoa(s.Port), "-U", s.User, "-d", db, "--exit-on-error", "--data-only", "-t", table, file); err != nil {
		return fmt.Errorf("pg_restore -t %s: %w\n%s", table, err, out)
	}
	return nil
}

// NewCluster initialises and starts another cluster of the same
// installation and settings (a new system identifier) under parent.
func (s *Server) NewCluster(ctx context.Context, parent string) (*Server, error) {
	n, err := s.newDir(parent)
	if err != nil {
		return nil, err
	}
	if out, err := n.run(ctx, "initdb", InitdbArgs(n.Data(), n.User)...); err != nil {
		n.remove()
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if err := n.Restart(ctx); err != nil {
		n.remove()
		return nil, err
	}
	return n, nil
}

// Remove stops the server if it runs (immediately) and removes its
// directory.
func (s *Server) Remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.run(ctx, "pg_ctl", "-D", s.Data(), "-m", "immediate", "-w", "stop")
	s.remove()
}

// Shutdown stops the server cleanly (pg_ctl stop -m fast: a shutdown
// checkpoint) and keeps its files.
func (s *Server) Shutdown(ctx context.Context) error {
	if out, err := s.run(ctx, "pg_ctl", "-D", s.Data(), "-m", "fast", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop -m fast: %w\n%s", err, out)
	}
	return nil
}

// UpgradeFrom runs pg_upgrade from old's cluster into s's (both shut
// down; s initialised and holding no database of its own), as the
// servers' user, in s's directory; s is then started.
func (s *Server) UpgradeFrom(ctx context.Context, old *Server) error {
	out, err := s.run(ctx, "pg_upgrade", "-b", old.Install.BinDir, "-B", s.Install.BinDir,
		"-d", old.Data(), "-D", s.Data(), "-U", s.User, "--socketdir", s.Dir, "-p", "50432", "-P", "50433")
	if err != nil {
		return fmt.Errorf("pg_upgrade: %w\n%s", err, out)
	}
	return s.Restart(ctx)
}

// SingleUser runs a stand-alone backend (postgres --single) on database
// db of a copy of s's data directory (s shut down), statements read from
// stdin, as the server's user; wrap, when given, is a program and its
// arguments that run the backend (valgrind, for example). The copy is
// removed afterwards, so each run starts from the same files.
func (s *Server) SingleUser(ctx context.Context, db string, stdin io.Reader, settings []string, wrap ...string) ([]byte, error) {
	n, err := s.newDir(s.Dir)
	if err != nil {
		return nil, err
	}
	defer n.remove()
	if out, err := exec.CommandContext(ctx, "cp", "-a", s.Data(), n.Data()).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy %s: %w\n%s", s.Data(), err, out)
	}
	if err := n.own(n.Data()); err != nil {
		return nil, err
	}
	args := append(slices.Clone(wrap), filepath.Join(s.Install.BinDir, "postgres"), "--single", "-D", n.Data())
	for _, kv := range settings {
		args = append(args, "-c", kv)
	}
	cmd := exec.CommandContext(ctx, args[0], append(args[1:], db)...)
	cmd.Dir = n.Dir
	cmd.Stdin = stdin
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd.CombinedOutput()
}
