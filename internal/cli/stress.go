package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	pglease "github.com/pglease/pglease-gen"
	"github.com/pglease/pglease-gen/internal/leaseclient"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/stress"
)

type stressCmd struct {
	cfg       stress.Config
	pgConfig  string
	report    int
	pgbouncer bool
	pool      int
}

func newStress() *cobra.Command {
	c := &stressCmd{}
	cmd := &cobra.Command{
		Use:   "stress",
		Short: "Run many clients against pg_lease and check the history",
		Long: "Start a throwaway server (or use --dsn), run --clients clients on --names names\n" +
			"doing random acquire (blocking and not), renew, release and inspect with TTLs\n" +
			"from milliseconds to seconds, and (--fencing) guarded transactions that write a\n" +
			"row under lease.guard and lease.purge calls, for --duration; then check every\n" +
			"call, every guarded write and the\n" +
			"final table against the lease's guarantees. The last line is\n" +
			"`stress: N operations checked, V violations`; the exit status is 1 when V > 0.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(cmd) },
	}
	f := cmd.Flags()
	f.DurationVar(&c.cfg.Duration, "duration", 30*time.Second, "how long the clients run")
	f.IntVar(&c.cfg.Clients, "clients", 8, "concurrent clients (one connection and one owner each)")
	f.IntVar(&c.cfg.Names, "names", 4, "lease names they contend for")
	f.Uint64Var(&c.cfg.Seed, "seed", 1, "random seed of the workload")
	f.StringVar(&c.cfg.DSN, "dsn", "", "a server with pg_lease installed (default: start a throwaway one)")
	f.StringVar(&c.pgConfig, "pg-config", "", "without --dsn: pg_config of the installation to start")
	f.BoolVar(&c.cfg.Fencing, "fencing", true, "add guarded transactions (lease.guard, a write, a commit) and lease.purge calls; false for a pg_lease 0.1.0 database")
	f.IntVar(&c.report, "show", 10, "violations to print in full")
	f.BoolVar(&c.pgbouncer, "via-pgbouncer", false, "without --dsn: the clients go through PgBouncer (Debian's) in transaction pooling in front of the server")
	f.IntVar(&c.pool, "pool-size", 8, "with --via-pgbouncer: the pooler's server connections")
	return cmd
}

func (c *stressCmd) run(cmd *cobra.Command) error {
	ctx, w := cmd.Context(), cmd.OutOrStdout()
	if c.cfg.Clients < 1 || c.cfg.Names < 1 || c.cfg.Duration <= 0 || c.pool < 1 {
		return errors.New("--clients, --names, --duration and --pool-size must be positive")
	}
	if c.pgbouncer && c.cfg.DSN != "" {
		return errors.New("--via-pgbouncer starts a pooler in front of the throwaway server: leave out --dsn (or give the pooler's DSN there)")
	}
	if c.cfg.DSN == "" {
		srv, inst, err := pgserver.StartWithExtension(ctx, c.pgConfig, model.PgLease, pglease.Files)
		if err != nil {
			return err
		}
		defer srv.Stop()
		c.cfg.DSN = srv.DSN("postgres")
		conn, err := pgx.Connect(ctx, c.cfg.DSN)
		if err != nil {
			return err
		}
		err = leaseclient.Create(ctx, conn)
		conn.Close(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "server: PostgreSQL %d on %s\n", inst.Major, srv.Socket())
		if c.pgbouncer {
			c.cfg = c.cfg.Defaults()
			b, err := srv.StartPgBouncer(c.pool, fmt.Sprintf("SET statement_timeout = %d", c.cfg.StatementTimeout().Milliseconds()))
			if err != nil {
				return err
			}
			defer b.Stop()
			c.cfg.DSN, c.cfg.Pooled = b.DSN("postgres", srv.User), true
			fmt.Fprintf(w, "pooler: PgBouncer in transaction pooling, %d server connections, on %s\n", c.pool, b.Dir)
		}
	}
	cfg := c.cfg.Defaults()
	fmt.Fprintf(w, "stress: %d clients x %d names for %s (seed %d)\n", cfg.Clients, cfg.Names, cfg.Duration, cfg.Seed)
	start := time.Now()
	ops, err := stress.Run(ctx, cfg)
	if err != nil {
		return err
	}
	final, err := stress.Table(ctx, cfg.DSN, cfg.Prefix)
	if err != nil {
		return err
	}
	if cfg.Fencing {
		if err := stress.Writes(ctx, cfg.DSN, cfg.Prefix, ops); err != nil {
			return err
		}
	}
	ran := time.Since(start)
	counts := map[string]int{}
	for _, o := range ops {
		counts[string(o.Kind)]++
	}
	fmt.Fprintf(w, "ran %s: %d acquire, %d renew, %d release, %d inspect, %d guard, %d purge (%.0f/s)\n", ran.Round(time.Millisecond),
		counts["acquire"], counts["renew"], counts["release"], counts["inspect"], counts["guard"], counts["purge"], float64(len(ops))/ran.Seconds())
	start = time.Now()
	vs := stress.Check(ops, final)
	fmt.Fprintf(w, "checked in %s\n", time.Since(start).Round(time.Millisecond))
	for i, v := range vs {
		if i == c.report {
			fmt.Fprintf(w, "... and %d more\n", len(vs)-i)
			break
		}
		fmt.Fprintln(w, v)
	}
	fmt.Fprintf(w, "stress: %d operations checked, %d violations\n", len(ops), len(vs))
	if len(vs) > 0 {
		return &exitError{ExitFailure, fmt.Errorf("%d violations", len(vs))}
	}
	return nil
}
