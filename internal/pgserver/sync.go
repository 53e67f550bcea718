package pgserver

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/render"
)

// noStandby is a standby name no test gives a standby.
const noStandby = "pglease_no_such_standby"

// SetSystem changes a setting of the server with ALTER SYSTEM (value ""
// resets it), reloads, and waits until a new connection sees the value:
// pg_reload_conf() only signals the postmaster, and on a loaded machine a
// connection made at once can still get the old value. Once a new
// backend has the new one, the postmaster has signalled every running
// process too, which applies it before its next command.
func (s *Server) SetSystem(ctx context.Context, name, value string) error {
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	lit, err := render.QuoteLiteral(value)
	if err != nil {
		return err
	}
	alter := "ALTER SYSTEM SET " + pgx.Identifier{name}.Sanitize() + " = " + lit
	if value == "" {
		alter = "ALTER SYSTEM RESET " + pgx.Identifier{name}.Sanitize()
	}
	for _, sql := range []string{alter, "SELECT pg_reload_conf()"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	var now string
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		fresh, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err != nil {
			return err
		}
		err = fresh.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&now)
		fresh.Close(ctx)
		if err != nil {
			return err
		}
		if now == value {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s: a new connection still sees %q 30 s after the reload, not %q", name, now, value)
		}
	}
}

// RequireSyncStandby sets synchronous_standby_names to name and returns
// once every commit at synchronous_commit = on waits for that standby.
// A reload is not enough to know that: backends wait only once the
// checkpointer has read it (it publishes that a synchronous standby is
// named), which on a loaded machine comes later than theirs, and a commit
// acknowledged at once by a connected standby cannot tell the two apart.
// So the setting first names a standby that does not exist, a probe's
// commit is tried until one is seen waiting (then cancelled: it stands,
// with a warning), and only then is the wanted name set: from there on a
// commit always waits, if only for the walsender to read the new name.
// The probe's table, sync_probe, is in the postgres database.
func (s *Server) RequireSyncStandby(ctx context.Context, name string) error {
	if err := s.SetSystem(ctx, "synchronous_standby_names", noStandby); err != nil {
		return err
	}
	if err := s.probeSyncWait(ctx); err != nil {
		return err
	}
	return s.SetSystem(ctx, "synchronous_standby_names", name)
}

func (s *Server) probeSyncWait(ctx context.Context) error {
	probe, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	defer probe.Close(ctx)
	watch, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	defer watch.Close(ctx)
	pid := probe.PgConn().PID()
	// the probe's table, made without waiting for a standby
	for _, sql := range []string{"SET synchronous_commit = local", "CREATE TABLE IF NOT EXISTS sync_probe (x int)", "RESET synchronous_commit"} {
		if _, err := probe.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	// waited is one probe, an insert: true when its commit was seen
	// waiting (and then cancelled), false when it committed without
	// waiting
	waited := func() (bool, error) {
		inserted := make(chan error, 1)
		go func() { _, err := probe.Exec(ctx, "INSERT INTO sync_probe VALUES (1)"); inserted <- err }()
		for {
			select {
			case err := <-inserted:
				return false, err
			case <-time.After(20 * time.Millisecond):
			}
			var waits bool
			if err := watch.QueryRow(ctx, "SELECT count(*) = 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'SyncRep'", pid).Scan(&waits); err != nil {
				return false, err
			}
			if waits {
				if _, err := watch.Exec(ctx, "SELECT pg_cancel_backend($1)", pid); err != nil {
					return false, err
				}
				// a cancelled wait commits all the same, with a warning
				return true, <-inserted
			}
		}
	}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ok, err := waited()
		if err != nil || ok {
			return err
		}
		if time.Now().After(end) {
			return fmt.Errorf("for 30 s every commit at synchronous_commit = on returned without waiting for the synchronous standby named %s: the checkpointer never read the reload", noStandby)
		}
	}
}

// WaitSubscribed waits until every table of the subscriptions in
// database db has synced (its initial copy done, its changes streaming),
// for 30 s at most.
func (s *Server) WaitSubscribed(ctx context.Context, db string) error {
	conn, err := pgx.Connect(ctx, s.DSN(db))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var ready bool
		err := conn.QueryRow(ctx, "SELECT count(*) > 0 AND bool_and(srsubstate = 'r') FROM pg_subscription_rel").Scan(&ready)
		if err == nil && ready {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("the subscription in %s did not sync in 30 s (%v)\n%s", db, err, s.Log())
		}
	}
}
