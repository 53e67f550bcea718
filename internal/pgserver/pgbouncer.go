package pgserver

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// PgBouncer is a connection pooler in front of a throwaway server, in
// transaction pooling: a client has a server connection only for the
// length of each transaction, so session state (SET, prepared statements,
// session advisory locks) does not follow it. It listens only on a unix
// socket in the server's directory.
type PgBouncer struct {
	Dir    string // holds its socket, configuration and log
	Port   int
	cmd    *exec.Cmd
	exited chan error
}

// PgBouncerPort is the port in the name of the pooler's socket.
const PgBouncerPort = 6432

// StartPgBouncer starts Debian's pgbouncer in front of s, in transaction
// pooling with pool server connections per database and user. connect
// is run on every server connection it opens (e.g. SET statement_timeout
// = 5000), or nothing when empty.
func (s *Server) StartPgBouncer(pool int, connect string) (*PgBouncer, error) {
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, statErr := os.Stat("/usr/sbin/pgbouncer"); statErr != nil {
			return nil, fmt.Errorf("pgbouncer is not installed: apt-get install pgbouncer (make deps does)")
		}
		bin = "/usr/sbin/pgbouncer"
	}
	dir := filepath.Join(s.Dir, "pgbouncer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if s.cred != nil {
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return nil, err
		}
	}
	db := fmt.Sprintf("host=%s port=%d", s.Dir, s.Port)
	if connect != "" {
		db += " connect_query='" + strings.ReplaceAll(connect, "'", "''") + "'"
	}
	ini := strings.Join([]string{
		"[databases]",
		"* = " + db,
		"[pgbouncer]",
		"listen_addr =", // no TCP: the unix socket only
		fmt.Sprintf("listen_port = %d", PgBouncerPort),
		"unix_socket_dir = " + dir,
		"auth_type = trust",
		"auth_file = " + filepath.Join(dir, "users.txt"),
		"pool_mode = transaction",
		fmt.Sprintf("default_pool_size = %d", pool),
		"max_client_conn = 1000",
		"ignore_startup_parameters = extra_float_digits",
		"logfile = " + filepath.Join(dir, "pgbouncer.log"),
		"",
	}, "\n")
	users := fmt.Sprintf("%q \"\"\n", s.User)
	for name, body := range map[string]string{"pgbouncer.ini": ini, "users.txt": users} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	cmd.Dir = dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start pgbouncer: %w", err)
	}
	b := &PgBouncer{Dir: dir, Port: PgBouncerPort, cmd: cmd, exited: make(chan error, 1)}
	go func() { b.exited <- cmd.Wait() }()
	sock := filepath.Join(dir, fmt.Sprintf(".s.PGSQL.%d", PgBouncerPort))
	for deadline := time.Now().Add(10 * time.Second); ; {
		// (a connection, not the socket file: the file is there from
		// bind, before pgbouncer listens, and a client then is refused)
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return b, nil
		}
		select {
		case err := <-b.exited:
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			return nil, fmt.Errorf("pgbouncer exited (%v):\n%s", err, log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-b.exited
			return nil, fmt.Errorf("pgbouncer did not open %s in 10s", sock)
		}
	}
}

// DSN is a connection string for database db through the pooler. pgx
// runs every query as an unnamed statement there (default_query_exec_mode
// exec), since a named prepared statement would stay with one server
// connection (PgBouncer before 1.21 does not track them).
func (b *PgBouncer) DSN(db, user string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable default_query_exec_mode=exec", b.Dir, b.Port, user, db)
}

// Stop stops the pooler.
func (b *PgBouncer) Stop() {
	b.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-b.exited:
	case <-time.After(5 * time.Second):
		b.cmd.Process.Kill()
		<-b.exited
	}
}
