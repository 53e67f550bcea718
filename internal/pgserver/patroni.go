package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// An HACluster is PostgreSQL run by a real HA manager on loopback: one
// etcd member and a Patroni per node (Debian's patroni and etcd-server
// packages). Each node's server listens on 127.0.0.1 (for replication and
// pg_rewind, which Patroni runs over TCP) and on a unix socket in the
// node's directory, which is what the tests connect to.
type HACluster struct {
	inst     Install
	dir      string
	settings []string // the servers' settings ("name=value")
	etcd     *exec.Cmd
	etcdPort int
	Nodes    []*HANode
}

// An HANode is one Patroni and the server it runs.
type HANode struct {
	*Server
	Name    string
	rest    int // Patroni's REST API port
	patroni *exec.Cmd
}

// The HA manager's timings: a lost leader's key lapses after haTTL, and
// Patroni looks every second.
const haTTL = 10

// StartHA starts etcd and the first node under parent; its Patroni
// bootstraps the cluster (initdb) and makes its server the primary.
// settings are the servers' settings ("name=value").
func StartHA(ctx context.Context, inst Install, parent string, settings ...string) (*HACluster, error) {
	for _, prog := range []string{"patroni", "etcd"} {
		if _, err := exec.LookPath(prog); err != nil {
			return nil, fmt.Errorf("the HA cluster needs %s: apt-get install patroni etcd-server (make deps does)", prog)
		}
	}
	dir, err := os.MkdirTemp(parent, "pglease-ha-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	c := &HACluster{inst: inst, dir: dir, settings: settings}
	if err := c.startEtcd(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	n, err := c.AddNode(ctx)
	if err != nil {
		c.Stop()
		return nil, err
	}
	if err := n.waitRole(ctx, "primary", time.Minute); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *HACluster) startEtcd(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	c.etcdPort = ports[0]
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	log, err := os.Create(filepath.Join(c.dir, "etcd.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	c.etcd = exec.Command("etcd", "--name", "e1", "--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e1="+peer, "--initial-cluster-state", "new")
	c.etcd.Stdout, c.etcd.Stderr = log, log
	if err := c.etcd.Start(); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	return poll(ctx, 30*time.Second, func() error {
		return httpGet(client + "/health")
	}, func() string { return c.logOf("etcd.log") })
}

// AddNode starts another node: its Patroni bootstraps the cluster when
// there is none, or makes its server a replica of the leader
// (pg_basebackup), as Patroni decides.
func (c *HACluster) AddNode(ctx context.Context) (*HANode, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("node%d", len(c.Nodes)+1)
	srv := &Server{Install: c.inst, Dir: filepath.Join(c.dir, name), Port: ports[0], User: BootstrapUser}
	if err := os.Mkdir(srv.Dir, 0o700); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		if srv.cred, err = lookupPostgres(); err != nil {
			return nil, err
		}
		if err := os.Chown(srv.Dir, int(srv.cred.Uid), int(srv.cred.Gid)); err != nil {
			return nil, err
		}
	}
	n := &HANode{Server: srv, Name: name, rest: ports[1]}
	if err := os.WriteFile(n.confFile(), []byte(c.patroniConf(n)), 0o644); err != nil {
		return nil, err
	}
	c.Nodes = append(c.Nodes, n)
	return n, n.start()
}

func (n *HANode) confFile() string { return filepath.Join(filepath.Dir(n.Dir), n.Name+".yml") }

func (n *HANode) start() error {
	log, err := os.OpenFile(filepath.Join(filepath.Dir(n.Dir), n.Name+".log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	n.patroni = exec.Command("patroni", n.confFile())
	n.patroni.Dir = n.Dir
	n.patroni.Stdout, n.patroni.Stderr = log, log
	n.patroni.Env = append(os.Environ(), "HOME="+n.Dir)
	if n.cred != nil {
		n.patroni.SysProcAttr = &syscall.SysProcAttr{Credential: n.cred}
	}
	if err := n.patroni.Start(); err != nil {
		return fmt.Errorf("patroni %s: %w", n.Name, err)
	}
	return nil
}

// patroniConf is node n's Patroni configuration: fast timings (a lost
// leader is replaced within haTTL), trust on loopback and the socket,
// pg_rewind for a node that comes back, a replica's base backup
// without waiting for a spread checkpoint, failover to an asynchronous
// replica whatever its lag (the faults decide what is lost, not Patroni).
func (c *HACluster) patroniConf(n *HANode) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	var params strings.Builder
	for _, s := range append([]string{"unix_socket_directories=" + n.Dir, "wal_log_hints=on", "max_connections=50"}, c.settings...) {
		k, v, _ := strings.Cut(s, "=")
		fmt.Fprintf(&params, "    %s: %s\n", strings.TrimSpace(k), q(strings.Trim(strings.TrimSpace(v), "'")))
	}
	return fmt.Sprintf(`scope: pglease
name: %[1]s
restapi:
  listen: 127.0.0.1:%[2]d
  connect_address: 127.0.0.1:%[2]d
etcd3:
  hosts: 127.0.0.1:%[3]d
bootstrap:
  dcs:
    ttl: %[4]d
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 1099511627776
    postgresql:
      use_pg_rewind: true
  initdb:
  - encoding: UTF8
  - no-locale
  pg_hba:
  - local all all trust
  - host all all 127.0.0.1/32 trust
  - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:%[5]d
  connect_address: 127.0.0.1:%[5]d
  data_dir: %[6]s
  bin_dir: %[7]s
  pgpass: %[8]s
  use_unix_socket: true
  basebackup:
  - checkpoint: fast
  authentication:
    superuser:
      username: %[9]s
    replication:
      username: %[9]s
  parameters:
%[10]s`, n.Name, n.rest, c.etcdPort, haTTL, n.Port, n.Data(), c.inst.BinDir, filepath.Join(n.Dir, "pgpass"), n.User, params.String())
}

// Role is what Patroni's REST API says the node is: "primary",
// "replica", or an error when it does not answer or is neither.
func (n *HANode) Role() (string, error) {
	for _, role := range []string{"primary", "replica"} {
		if httpGet(fmt.Sprintf("http://127.0.0.1:%d/%s", n.rest, role)) == nil {
			return role, nil
		}
	}
	return "", fmt.Errorf("patroni %s is neither primary nor replica", n.Name)
}

// waitRole waits until Patroni says the node is role and its server
// agrees (pg_is_in_recovery), and for a replica, that it streams.
func (n *HANode) waitRole(ctx context.Context, role string, timeout time.Duration) error {
	return poll(ctx, timeout, func() error {
		if r, err := n.Role(); err != nil || r != role {
			return fmt.Errorf("%s is %q (%v), not %s", n.Name, r, err, role)
		}
		conn, err := pgx.Connect(ctx, n.DSN("postgres"))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var ok bool
		q := "SELECT NOT pg_is_in_recovery()"
		if role == "replica" {
			q = "SELECT pg_is_in_recovery() AND EXISTS (SELECT FROM pg_stat_wal_receiver WHERE status = 'streaming')"
		}
		if err := conn.QueryRow(ctx, q).Scan(&ok); err != nil || !ok {
			return fmt.Errorf("%s's server is not a %s yet (%v)", n.Name, role, err)
		}
		return nil
	}, func() string { return n.logs() })
}

// WaitPrimary waits until Patroni has made the node's server the primary.
func (n *HANode) WaitPrimary(ctx context.Context) error {
	return n.waitRole(ctx, "primary", 3*haTTL*time.Second)
}

// WaitReplica waits until the node's server streams from the leader.
func (n *HANode) WaitReplica(ctx context.Context) error {
	return n.waitRole(ctx, "replica", 2*time.Minute)
}

// Lose kills the node as a lost machine dies: its Patroni and its server
// at once (SIGKILL), so that nothing demotes, fences or restarts it; its
// leader key, if it held it, lapses after the TTL.
func (n *HANode) Lose() error {
	if n.patroni != nil && n.patroni.Process != nil {
		n.patroni.Process.Kill()
		n.patroni.Wait()
		n.patroni = nil
	}
	return n.Kill()
}

// Rejoin starts the lost node's Patroni again: it rewinds the server
// (pg_rewind) and makes it a replica of the new leader.
func (n *HANode) Rejoin(ctx context.Context) error {
	if err := n.start(); err != nil {
		return err
	}
	return n.WaitReplica(ctx)
}

// Switchover asks Patroni (through from's REST API, as patronictl
// switchover does) to hand the primary role from from to to: from shuts
// down cleanly and follows, to is promoted. It waits for both.
func (c *HACluster) Switchover(ctx context.Context, from, to *HANode) error {
	body := fmt.Sprintf(`{"leader": %q, "candidate": %q}`, from.Name, to.Name)
	resp, err := haClient.Post(fmt.Sprintf("http://127.0.0.1:%d/switchover", from.rest), "application/json", strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("switchover: %w", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("switchover from %s to %s: %s: %s", from.Name, to.Name, resp.Status, msg)
	}
	if err := to.WaitPrimary(ctx); err != nil {
		return err
	}
	return from.WaitReplica(ctx)
}

func (n *HANode) logs() string {
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(n.Dir), n.Name+".log"))
	return tailString(string(b), 3000)
}

func (c *HACluster) logOf(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, name))
	return tailString(string(b), 3000)
}

// Stop ends every Patroni, server and etcd, and removes the directory.
func (c *HACluster) Stop() {
	for _, n := range c.Nodes {
		n.Lose()
	}
	if c.etcd != nil && c.etcd.Process != nil {
		c.etcd.Process.Kill()
		c.etcd.Wait()
	}
	os.RemoveAll(c.dir)
}

// freePorts are n TCP ports on 127.0.0.1 that nothing listens on now.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// (a switchover's POST answers once it is done: up to a minute)
var haClient = &http.Client{Timeout: time.Minute}

func httpGet(url string) error {
	resp, err := haClient.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(url + ": " + resp.Status)
	}
	return nil
}

// poll calls f until it succeeds or timeout passes; the error then
// carries f's last error and what logs says.
func poll(ctx context.Context, timeout time.Duration, f func() error, logs func() string) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("after %s: %w\n%s", timeout, err, logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
