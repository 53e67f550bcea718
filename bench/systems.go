package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pglease/pglease-gen/internal/leaseclient"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A Client is one connection of a lease system. Acquire returns a token
// (the epoch, or whatever the system hands out) and whether it got the
// lease; Release and Renew report whether the token was still good.
type Client interface {
	Acquire(ctx context.Context, name, owner string, ttl time.Duration) (token int64, ok bool, err error)
	AcquireWait(ctx context.Context, name, owner string, ttl, wait time.Duration) (token int64, ok bool, err error)
	Renew(ctx context.Context, name, owner string, token int64, ttl time.Duration) (bool, error)
	Release(ctx context.Context, name, owner string, token int64) (bool, error)
	BackendPID() int // the server process doing the waiting, 0 if none
	Close()
}

// System makes clients.
type System struct {
	Name    string
	Durable string // what a committed acquire survives
	Connect func(ctx context.Context) (Client, error)
	// HandOffOnly: measured in the hand-off only (the Go client, whose
	// other calls are pg_lease's own)
	HandOffOnly bool
}

// ---- pg_lease

type pgLease struct {
	conn    *pgx.Conn
	pid     int
	session *pgSession // HoldAll's
}

func pgConnect(ctx context.Context, dsn, syncCommit string) (*pgx.Conn, int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, 0, err
	}
	if _, err := conn.Exec(ctx, "SET synchronous_commit = "+syncCommit); err != nil {
		conn.Close(ctx)
		return nil, 0, err
	}
	var pid int
	err = conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
	return conn, pid, err
}

func (c *pgLease) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	g, err := leaseclient.Acquire(ctx, c.conn, name, owner, ttl, nil)
	if err != nil || !g.Acquired {
		return 0, false, err
	}
	return *g.Epoch, true, nil
}

func (c *pgLease) AcquireWait(ctx context.Context, name, owner string, ttl, wait time.Duration) (int64, bool, error) {
	g, err := leaseclient.Acquire(ctx, c.conn, name, owner, ttl, wait)
	if err != nil || !g.Acquired {
		return 0, false, err
	}
	return *g.Epoch, true, nil
}

func (c *pgLease) Renew(ctx context.Context, name, owner string, token int64, ttl time.Duration) (bool, error) {
	r, err := leaseclient.Renew(ctx, c.conn, name, owner, token, ttl)
	return r.Status == "ok", err
}

func (c *pgLease) Release(ctx context.Context, name, owner string, token int64) (bool, error) {
	status, err := leaseclient.Release(ctx, c.conn, name, owner, token)
	return status == "ok", err
}

func (c *pgLease) BackendPID() int { return c.pid }
func (c *pgLease) Close()          { c.conn.Close(context.Background()) }

// ---- the floor: the same state changes as bare single-statement UPDATEs
// on a table of the same shape, with the same durability

const floorSchema = `CREATE TABLE IF NOT EXISTS floor_leases (
    name text PRIMARY KEY, owner text, epoch bigint NOT NULL DEFAULT 1, expires_at timestamptz)`

type floor struct{ pgLease }

func (c *floor) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	var epoch int64
	err := c.conn.QueryRow(ctx, `INSERT INTO floor_leases AS l (name, owner, epoch, expires_at)
		VALUES ($1, $2, 1, clock_timestamp() + $3)
		ON CONFLICT (name) DO UPDATE
		SET owner = $2, epoch = CASE WHEN l.owner IS NULL THEN l.epoch ELSE l.epoch + 1 END, expires_at = clock_timestamp() + $3
		WHERE l.owner IS NULL OR l.expires_at <= clock_timestamp()
		RETURNING epoch`, name, owner, ttl).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return epoch, err == nil, err
}

func (c *floor) AcquireWait(ctx context.Context, name, owner string, ttl, wait time.Duration) (int64, bool, error) {
	deadline := time.Now().Add(wait)
	for {
		e, ok, err := c.Acquire(ctx, name, owner, ttl)
		if ok || err != nil || time.Now().After(deadline) {
			return e, ok, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *floor) Renew(ctx context.Context, name, owner string, token int64, ttl time.Duration) (bool, error) {
	tag, err := c.conn.Exec(ctx, `UPDATE floor_leases SET expires_at = clock_timestamp() + $4
		WHERE name = $1 AND owner = $2 AND epoch = $3 AND expires_at > clock_timestamp()`, name, owner, token, ttl)
	return tag.RowsAffected() == 1, err
}

func (c *floor) Release(ctx context.Context, name, owner string, token int64) (bool, error) {
	tag, err := c.conn.Exec(ctx, `UPDATE floor_leases SET owner = NULL, expires_at = NULL, epoch = epoch + 1
		WHERE name = $1 AND owner = $2 AND epoch = $3 AND expires_at > clock_timestamp()`, name, owner, token)
	return tag.RowsAffected() == 1, err
}

// ---- advisory locks: in memory, no expiry, released with the session

type advisory struct{ pgLease }

func key(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}

func (c *advisory) Acquire(ctx context.Context, name, _ string, _ time.Duration) (int64, bool, error) {
	var ok bool
	err := c.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key(name)).Scan(&ok)
	return 1, ok, err
}

func (c *advisory) AcquireWait(ctx context.Context, name, _ string, _, _ time.Duration) (int64, bool, error) {
	_, err := c.conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key(name))
	return 1, err == nil, err
}

// errNoRenew: advisory locks do not expire, so there is nothing to renew.
var errNoRenew = errors.New("advisory locks do not expire")

func (c *advisory) Renew(context.Context, string, string, int64, time.Duration) (bool, error) {
	return false, errNoRenew
}

func (c *advisory) Release(ctx context.Context, name, _ string, _ int64) (bool, error) {
	var ok bool
	err := c.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", key(name)).Scan(&ok)
	return ok, err
}

// ---- Redis: SET NX PX with a token, released and renewed by scripts that
// check the token

var (
	redisRelease = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`)
	redisRenew   = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`)
)

type redisClient struct {
	c   *redis.Client
	seq int64
}

func (r *redisClient) token(owner string) string { return fmt.Sprintf("%s:%d", owner, r.seq) }

func (r *redisClient) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	r.seq++
	ok, err := r.c.SetNX(ctx, name, r.token(owner), ttl).Result()
	return r.seq, ok, err
}

func (r *redisClient) AcquireWait(ctx context.Context, name, owner string, ttl, wait time.Duration) (int64, bool, error) {
	deadline := time.Now().Add(wait)
	for {
		t, ok, err := r.Acquire(ctx, name, owner, ttl)
		if ok || err != nil || time.Now().After(deadline) {
			return t, ok, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *redisClient) Renew(ctx context.Context, name, owner string, token int64, ttl time.Duration) (bool, error) {
	n, err := redisRenew.Run(ctx, r.c, []string{name}, fmt.Sprintf("%s:%d", owner, token), ttl.Milliseconds()).Int()
	return n == 1, err
}

func (r *redisClient) Release(ctx context.Context, name, owner string, token int64) (bool, error) {
	n, err := redisRelease.Run(ctx, r.c, []string{name}, fmt.Sprintf("%s:%d", owner, token)).Int()
	return n == 1, err
}

func (r *redisClient) BackendPID() int { return 0 }
func (r *redisClient) Close()          { r.c.Close() }

// ---- etcd: a lease per acquire (its ID is the token) and a transaction
// that puts the key only if it does not exist; revoking the lease deletes
// the key, so release and renew need the token and nothing else

type etcdClient struct {
	c     *clientv3.Client
	lease clientv3.LeaseID // HoldAll's
}

func (e *etcdClient) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	l, err := e.c.Grant(ctx, max(1, int64(ttl/time.Second)))
	if err != nil {
		return 0, false, err
	}
	resp, err := e.c.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(name), "=", 0)).
		Then(clientv3.OpPut(name, owner, clientv3.WithLease(l.ID))).
		Commit()
	if err != nil || !resp.Succeeded {
		e.c.Revoke(ctx, l.ID)
		return 0, false, err
	}
	return int64(l.ID), true, nil
}

func (e *etcdClient) AcquireWait(ctx context.Context, name, owner string, ttl, wait time.Duration) (int64, bool, error) {
	deadline := time.Now().Add(wait)
	for {
		t, ok, err := e.Acquire(ctx, name, owner, ttl)
		if ok || err != nil || time.Now().After(deadline) {
			return t, ok, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *etcdClient) Renew(ctx context.Context, _, _ string, token int64, _ time.Duration) (bool, error) {
	_, err := e.c.KeepAliveOnce(ctx, clientv3.LeaseID(token))
	return err == nil, err
}

func (e *etcdClient) Release(ctx context.Context, _, _ string, token int64) (bool, error) {
	_, err := e.c.Revoke(ctx, clientv3.LeaseID(token))
	return err == nil, err
}

func (e *etcdClient) BackendPID() int { return 0 }
func (e *etcdClient) Close()          { e.c.Close() }

// Keeper is a client that keeps many names alive with one call:
// pg_lease's session (0.5.0), an etcd lease with every key attached.
type Keeper interface {
	// HoldAll takes names under one session (lease) of owner's.
	HoldAll(ctx context.Context, owner string, names []string, ttl time.Duration) error
	// KeepAll renews the session, and so every name under it.
	KeepAll(ctx context.Context) (bool, error)
	// DropAll ends the session, releasing its names, through via (a
	// client of the same system: this one may be closed).
	DropAll(ctx context.Context, via Client) error
}

// pgSession is pg_lease's session on a pgLease client's connection.
type pgSession struct {
	id    int64
	owner string
}

func (c *pgLease) HoldAll(ctx context.Context, owner string, names []string, ttl time.Duration) error {
	var s pgSession
	s.owner = owner
	if err := c.conn.QueryRow(ctx, "SELECT session FROM lease.open_session($1, $2::interval)", owner, ttl).Scan(&s.id); err != nil {
		return err
	}
	for _, name := range names {
		var ok bool
		if err := c.conn.QueryRow(ctx, "SELECT acquired FROM lease.session_acquire($1, $2, $3)", s.id, owner, name).Scan(&ok); err != nil || !ok {
			return errOr(err, "session_acquire of free %s failed", name)
		}
	}
	c.session = &s
	return nil
}

func (c *pgLease) KeepAll(ctx context.Context) (bool, error) {
	var status string
	err := c.conn.QueryRow(ctx, "SELECT status FROM lease.keep_alive($1, $2)", c.session.id, c.session.owner).Scan(&status)
	return status == "ok", err
}

func (c *pgLease) DropAll(ctx context.Context, via Client) error {
	_, err := via.(*pgLease).conn.Exec(ctx, "SELECT lease.close_session($1, $2)", c.session.id, c.session.owner)
	return err
}

// etcd: one lease, every key attached to it.
func (e *etcdClient) HoldAll(ctx context.Context, owner string, names []string, ttl time.Duration) error {
	l, err := e.c.Grant(ctx, max(1, int64(ttl/time.Second)))
	if err != nil {
		return err
	}
	for _, name := range names {
		resp, err := e.c.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(name), "=", 0)).
			Then(clientv3.OpPut(name, owner, clientv3.WithLease(l.ID))).
			Commit()
		if err != nil || !resp.Succeeded {
			return errOr(err, "put of free %s failed", name)
		}
	}
	e.lease = l.ID
	return nil
}

func (e *etcdClient) KeepAll(ctx context.Context) (bool, error) {
	_, err := e.c.KeepAliveOnce(ctx, e.lease)
	return err == nil, err
}

func (e *etcdClient) DropAll(ctx context.Context, via Client) error {
	_, err := via.(*etcdClient).c.Revoke(ctx, e.lease)
	return err
}
