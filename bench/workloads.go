package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/model"
)

// Result is one measurement.
type Result struct {
	Workload string
	System   string
	Durable  string
	Clients  int
	Ops      int // completed operations (cycles, renews, hand-offs)
	Tries    int // attempts, where they differ from Ops
	Elapsed  time.Duration
	Lat      []time.Duration
	// hand-off: the delay from the start of the holder's release (Lat:
	// from its return), as the user who calls Release counts it
	FromStart []time.Duration
	// hand-off: the holder's acquire of the free name before each
	// hand-off, as the same system's floor for the waiter's acquire
	Acquire []time.Duration
	CPU     float64       // hand-off: waiter's server CPU, share of one core while waiting
	Server  time.Duration // CPU time of the clients' server processes (PostgreSQL systems)
	Client  time.Duration // CPU time of this process while the workload ran (where measured)
}

// ServerPerOp is the server CPU time per operation.
func (r Result) ServerPerOp() time.Duration {
	if r.Ops == 0 {
		return 0
	}
	return r.Server / time.Duration(r.Ops)
}

func (r Result) PerSec() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

func (r Result) Pct(p float64) time.Duration { return pct(r.Lat, p) }

func pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func (r Result) Key() string { return r.System + " (" + r.Durable + ")" }

func (r Result) String() string {
	s := fmt.Sprintf("%-9s %-26s c=%d  %9.0f/s  p50 %-9s p99 %s", r.Workload, r.Key(), r.Clients, r.PerSec(), r.Pct(0.5), r.Pct(0.99))
	if len(r.Acquire) > 0 {
		s += fmt.Sprintf("  (from the release's call: p50 %s p99 %s; a free name's acquire: p50 %s p99 %s)", pct(r.FromStart, 0.5), pct(r.FromStart, 0.99), pct(r.Acquire, 0.5), pct(r.Acquire, 0.99))
	}
	return s
}

// parallel runs op on clients connections for d and collects latencies.
func parallel(ctx context.Context, s System, clients int, d time.Duration, setup func(c Client, i int) error, op func(c Client, i, n int) (done bool, err error)) (Result, error) {
	rs, err := parallelMixed(ctx, []System{s}, clients, d, setup, op)
	return rs[0], err
}

// parallelMixed is parallel with the clients shared among systems, client
// i on systems[i%len(systems)], all at once: each system's result counts
// its own clients. Run side by side, systems meet the same machine at the
// same moments, which pairs of phases run one after the other do not.
func parallelMixed(ctx context.Context, systems []System, clients int, d time.Duration, setup func(c Client, i int) error, op func(c Client, i, n int) (done bool, err error)) ([]Result, error) {
	rs := make([]Result, len(systems))
	for k, s := range systems {
		rs[k] = Result{System: s.Name, Durable: s.Durable}
	}
	cs := make([]Client, clients)
	for i := range cs {
		c, err := systems[i%len(systems)].Connect(ctx)
		if err != nil {
			return rs, err
		}
		defer c.Close()
		if setup != nil {
			if err := setup(c, i); err != nil {
				return rs, err
			}
		}
		cs[i] = c
		rs[i%len(systems)].Clients++
	}
	// each system's clients, for their server processes' CPU
	own := func(k int) []Client {
		var mine []Client
		for i := k; i < clients; i += len(systems) {
			mine = append(mine, cs[i])
		}
		return mine
	}
	cpu0 := make([]time.Duration, len(systems))
	for k := range systems {
		cpu0[k] = serverCPU(own(k))
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for i, c := range cs {
		wg.Add(1)
		go pprof.Do(ctx, pprof.Labels("system", systems[i%len(systems)].Name), func(context.Context) {
			defer wg.Done()
			var my []time.Duration
			n, done := 0, 0
			for ; time.Now().Before(deadline); n++ {
				t0 := time.Now()
				ok, err := op(c, i, n)
				if err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
				if ok {
					done++
					my = append(my, time.Since(t0))
				}
			}
			mu.Lock()
			r := &rs[i%len(systems)]
			r.Lat, r.Ops, r.Tries = append(r.Lat, my...), r.Ops+done, r.Tries+n
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for k := range rs {
		rs[k].Elapsed = elapsed
		rs[k].Server = serverCPU(own(k)) - cpu0[k]
	}
	return rs, first
}

// cycles: acquire then release, each client on its own share of the names.
// Each connection first runs warmCycles cycles untimed: a new session
// compiles the functions and plans their statements (the first five
// plans of each are custom ones) before it reaches the steady state that
// a pooled application sees; firstCycles measures that start instead.
func cycles(ctx context.Context, s System, names []string, clients int, d time.Duration) (Result, error) {
	rs, err := cyclesSideBySide(ctx, []System{s}, names, clients, d)
	return rs[0], err
}

// cyclesSideBySide is cycles with the clients shared among systems, all
// running at once (parallelMixed).
func cyclesSideBySide(ctx context.Context, systems []System, names []string, clients int, d time.Duration) ([]Result, error) {
	cycle := func(c Client, i, n int) (bool, error) { return cycleOnce(ctx, c, names, clients, i, n) }
	rs, err := parallelMixed(ctx, systems, clients, d, func(c Client, i int) error { return warm(c, i, cycle) }, cycle)
	for k := range rs {
		rs[k].Workload = "cycle"
	}
	return rs, err
}

// warm runs client i's operation op warmCycles times, untimed.
func warm(c Client, i int, op func(c Client, i, n int) (bool, error)) error {
	for n := range warmCycles {
		if _, err := op(c, i, n); err != nil {
			return err
		}
	}
	return nil
}

// cycleOnce is client i's n-th cycle: acquire then release, on its own
// share of the names.
func cycleOnce(ctx context.Context, c Client, names []string, clients, i, n int) (bool, error) {
	name := names[(i+n*clients)%len(names)]
	owner := "w" + strconv.Itoa(i)
	tok, ok, err := c.Acquire(ctx, name, owner, 30*time.Second)
	if err != nil || !ok {
		return false, errOr(err, "acquire of free %s failed", name)
	}
	ok, err = c.Release(ctx, name, owner, tok)
	if err != nil || !ok {
		return false, errOr(err, "release of %s failed", name)
	}
	return true, nil
}

// warmCycles is how many cycles a connection runs before it is measured.
const warmCycles = 20

// firstCycles: each operation is a new connection's first cycle (connect,
// acquire, release, close), what an application that connects for each
// piece of work pays. The server CPU counted is what the postmaster's
// ended children used (the new connections end before their own could
// be read; in clock ticks of 10 ms, and with whatever else ended then).
func firstCycles(ctx context.Context, s System, names []string, clients int, d time.Duration) (Result, error) {
	c, err := s.Connect(ctx)
	if err != nil {
		return Result{}, err
	}
	postmaster := procStat(c.BackendPID(), 1)
	c.Close()
	cpu0 := procStat(postmaster, 13) + procStat(postmaster, 14)
	r, err := parallel(ctx, s, clients, d, nil, func(_ Client, i, n int) (bool, error) {
		c, err := s.Connect(ctx)
		if err != nil {
			return false, err
		}
		defer c.Close()
		return cycleOnce(ctx, c, names, clients, i, n)
	})
	r.Workload = "first cycle"
	r.Server = time.Duration(procStat(postmaster, 13)+procStat(postmaster, 14)-cpu0) * time.Second / 100
	return r, err
}

// procStat is field i of /proc/pid/stat counted from the one after the
// command (0: the state, 1: the parent, 11 and 12: user and system time,
// 13 and 14: those of the ended children, in clock ticks); 0 if unknown.
func procStat(pid, i int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid == 0 {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if i >= len(f) {
		return 0
	}
	v, _ := strconv.Atoi(f[i])
	return v
}

// renews: each client holds ten names and renews them in turn (after
// warmCycles renewals untimed).
func renews(ctx context.Context, s System, names []string, clients int, d time.Duration) (Result, error) {
	tokens := make([][]int64, clients)
	renew := func(c Client, i, n int) (bool, error) {
		k := n % 10
		ok, err := c.Renew(ctx, names[500+i*10+k], "r"+strconv.Itoa(i), tokens[i][k], time.Minute)
		if err != nil || !ok {
			return false, errOr(err, "renew failed")
		}
		return true, nil
	}
	r, err := parallel(ctx, s, clients, d, func(c Client, i int) error {
		for k := range 10 {
			name := names[500+i*10+k]
			tok, ok, err := c.Acquire(ctx, name, "r"+strconv.Itoa(i), time.Minute)
			if err != nil || !ok {
				return errOr(err, "acquire of free %s failed", name)
			}
			tokens[i] = append(tokens[i], tok)
		}
		return warm(c, i, renew)
	}, renew)
	// leave the names free for the next system
	for i := range clients {
		c, err := s.Connect(ctx)
		if err != nil {
			return r, err
		}
		for k := range 10 {
			c.Release(ctx, names[500+i*10+k], "r"+strconv.Itoa(i), tokens[i][k])
		}
		c.Close()
	}
	r.Workload = "renew"
	return r, err
}

// hot: every client tries to take one name (never waiting) and releases
// it when it does; Ops counts successful cycles, Tries all attempts.
func hot(ctx context.Context, s System, clients int, d time.Duration) (Result, error) {
	r, err := parallel(ctx, s, clients, d, nil, func(c Client, i, n int) (bool, error) {
		owner := "h" + strconv.Itoa(i)
		tok, ok, err := c.Acquire(ctx, "hot", owner, 30*time.Second)
		if err != nil || !ok {
			return false, err
		}
		ok, err = c.Release(ctx, "hot", owner, tok)
		if err != nil || !ok {
			return false, errOr(err, "release of hot failed")
		}
		return true, nil
	})
	r.Workload = "hot"
	return r, err
}

// handoff: a holder releases while a waiter blocks in acquire; the delay
// is from the release's return (committed) to the waiter's return, and
// from the release's start (the holder's call) to it.
func handoff(ctx context.Context, s System, n int) (Result, error) {
	holder, err := s.Connect(ctx)
	if err != nil {
		return Result{}, err
	}
	defer holder.Close()
	waiter, err := s.Connect(ctx)
	if err != nil {
		return Result{}, err
	}
	defer waiter.Close()
	r := Result{Workload: "hand-off", System: s.Name, Durable: s.Durable, Clients: 2}
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	var cpu, waited time.Duration
	start := time.Now()
	for k := range n {
		name := fmt.Sprintf("handoff-%d", k%4)
		a0 := time.Now()
		tok, ok, err := holder.Acquire(ctx, name, "holder", time.Minute)
		r.Acquire = append(r.Acquire, time.Since(a0))
		if err != nil || !ok {
			return r, errOr(err, "holder could not acquire %s", name)
		}
		type got struct {
			at  time.Time
			tok int64
			err error
		}
		ch := make(chan got, 1)
		cpu0 := procCPU(waiter.BackendPID())
		w0 := time.Now()
		go func() {
			t, ok, err := waiter.AcquireWait(ctx, name, "waiter", time.Minute, 10*time.Second)
			if err == nil && !ok {
				err = fmt.Errorf("the waiter timed out")
			}
			ch <- got{time.Now(), t, err}
		}()
		// the waiter is waiting; release at a random point of its polling
		// cycle (a fixed hold time would lock onto one phase of it)
		time.Sleep(20*time.Millisecond + time.Duration(rng.Int64N(int64(20*time.Millisecond))))
		called := time.Now()
		if ok, err := holder.Release(ctx, name, "holder", tok); err != nil || !ok {
			return r, errOr(err, "holder could not release %s", name)
		}
		released := time.Now()
		g := <-ch
		if g.err != nil {
			return r, g.err
		}
		waited += time.Since(w0)
		cpu += procCPU(waiter.BackendPID()) - cpu0
		r.Lat = append(r.Lat, max(0, g.at.Sub(released)))
		r.FromStart = append(r.FromStart, max(0, g.at.Sub(called)))
		r.Ops++
		if _, err := waiter.Release(ctx, name, "waiter", g.tok); err != nil {
			return r, err
		}
	}
	r.Elapsed = time.Since(start)
	if waited > 0 {
		r.CPU = float64(cpu) / float64(waited)
	}
	return r, nil
}

// procCPU is the CPU time a process has used so far: from schedstat, in
// nanoseconds, where the kernel has it; else from stat, in clock ticks.
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid)); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				return time.Duration(ns)
			}
		}
	}
	return time.Duration(procStat(pid, 11)+procStat(pid, 12)) * time.Second / 100 // clock ticks (USER_HZ = 100)
}

// serverCPU is the CPU time the clients' server processes have used.
func serverCPU(cs []Client) time.Duration {
	var t time.Duration
	for _, c := range cs {
		if g, ok := c.(interface{ serverPIDs(context.Context) []int }); ok {
			for _, pid := range g.serverPIDs(context.Background()) {
				t += procCPU(pid)
			}
			continue
		}
		t += procCPU(c.BackendPID())
	}
	return t
}

// Soak is how lease.leases grows under many acquire/release cycles: a
// sample after the first 10,000 cycles, then every Every cycles.
type Soak struct {
	Cycles, Names, Every int
	Clients              int
	Options              string // lease.leases' storage options (reloptions)
	Elapsed              time.Duration
	Samples              []SoakSample
}

// SoakSample is the table at one point of the soak. Updates, HOTs and
// Autovacuums count from the start of the soak.
type SoakSample struct {
	Cycles                    int
	Table, Index              int64 // bytes
	Dead                      int64 // n_dead_tup
	Updates, HOTs             int64
	Autovacuums, Autoanalyzes int64
	// Snapshot is the longest any session of the database had held its
	// snapshot, polled every 100 ms since the last sample. Pruning keeps
	// every row version such a snapshot may see.
	Snapshot time.Duration
	// Holder says what that session was: its backend type, the start of
	// its query, and the wait events the polls saw it in ("none": it was
	// on a CPU or waiting for one).
	Holder string
}

// Growth is the table's size at the end over its size at the first sample.
func (s Soak) Growth() float64 {
	if len(s.Samples) == 0 || s.Samples[0].Table == 0 {
		return 0
	}
	return float64(s.Samples[len(s.Samples)-1].Table) / float64(s.Samples[0].Table)
}

func (s Soak) String() string {
	if len(s.Samples) == 0 {
		return "no samples"
	}
	a, z := s.Samples[0], s.Samples[len(s.Samples)-1]
	return fmt.Sprintf("%d cycles on %d names in %s; table %d -> %d bytes (%.2fx), index %d -> %d; %d dead tuples; %d of %d updates not HOT; %d autovacuums, %d autoanalyzes",
		s.Cycles, s.Names, s.Elapsed.Round(time.Second), a.Table, z.Table, s.Growth(), a.Index, z.Index, z.Dead, z.Updates-z.HOTs, z.Updates, z.Autovacuums, z.Autoanalyzes)
}

// soakRun runs total acquire/release cycles, shared among clients
// connections, on names of its own, after one cycle on each name so that
// every row exists, sampling the table after 10,000 cycles and then every
// every cycles.
func soakRun(ctx context.Context, s System, admin *pgx.Conn, names, clients, total, every int, progress func(SoakSample)) (Soak, error) {
	out := Soak{Cycles: total, Names: names, Every: every, Clients: clients}
	keys := make([]string, names)
	for i := range keys {
		keys[i] = fmt.Sprintf("soak-%07d", i)
	}
	// run makes n cycles, shared among the clients, from cycle offset on
	run := func(offset, n int) error {
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := s.Connect(ctx)
				if err != nil {
					errs <- err
					return
				}
				defer c.Close()
				owner := "s" + strconv.Itoa(i)
				for k := i; k < n; k += clients {
					name := keys[(offset+k)%len(keys)]
					tok, ok, err := c.Acquire(ctx, name, owner, 30*time.Second)
					if err == nil && ok {
						_, err = c.Release(ctx, name, owner, tok)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	stats := func() (SoakSample, error) {
		// statistics reach the view when a backend goes idle, at most
		// once a second
		time.Sleep(1500 * time.Millisecond)
		var x SoakSample
		err := admin.QueryRow(ctx, `SELECT pg_relation_size('lease.leases'), pg_indexes_size('lease.leases'),
		        n_dead_tup, n_tup_upd, n_tup_hot_upd, autovacuum_count, autoanalyze_count
		   FROM pg_stat_user_tables WHERE relid = 'lease.leases'::regclass`).
			Scan(&x.Table, &x.Index, &x.Dead, &x.Updates, &x.HOTs, &x.Autovacuums, &x.Autoanalyzes)
		return x, err
	}
	if err := run(0, names); err != nil {
		return out, err
	}
	if err := admin.QueryRow(ctx, `SELECT coalesce(array_to_string(reloptions, ', '), '') FROM pg_class WHERE oid = 'lease.leases'::regclass`).Scan(&out.Options); err != nil {
		return out, err
	}
	base, err := stats()
	if err != nil {
		return out, err
	}
	done := 0
	for done < total {
		n := every
		if done == 0 {
			n = min(10_000, total)
		}
		n = min(n, total-done)
		start := time.Now()
		stop, longest := make(chan struct{}), make(chan error, 1)
		var held snapshotHold
		go func() { longest <- watchSnapshots(ctx, admin, stop, &held) }()
		err := run(done, n)
		close(stop)
		if err := errors.Join(err, <-longest); err != nil {
			return out, err
		}
		out.Elapsed += time.Since(start) // without the pauses for statistics
		done += n
		x, err := stats()
		if err != nil {
			return out, err
		}
		x.Cycles, x.Snapshot, x.Holder = done, held.longest, held.holder()
		x.Updates -= base.Updates
		x.HOTs -= base.HOTs
		x.Autovacuums -= base.Autovacuums
		x.Autoanalyzes -= base.Autoanalyzes
		out.Samples = append(out.Samples, x)
		if progress != nil {
			progress(x)
		}
	}
	return out, nil
}

// snapshotHold is what watchSnapshots saw: the longest-held snapshot, and
// the session that held it.
type snapshotHold struct {
	longest time.Duration
	who     string   // backend type and the start of its query
	waits   []string // the wait events it was seen in, in order, once each
	pid     int32    // the transaction holding it: pid and start
	since   time.Time
}

func (h *snapshotHold) holder() string {
	if h.who == "" {
		return ""
	}
	return h.who + "; waits: " + strings.Join(h.waits, ", ")
}

// watchSnapshots polls every 100 ms, until stop is closed, which session of
// the database (other than its own) has held a snapshot longest, and keeps
// in held the longest seen: for how long (since its transaction began), who
// it was, and the wait events it was seen in.
func watchSnapshots(ctx context.Context, admin *pgx.Conn, stop <-chan struct{}, held *snapshotHold) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var cur snapshotHold // the oldest transaction the last poll saw
	for {
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
		var (
			pid         int32
			since       time.Time
			us          int64
			who, waited string
		)
		err := admin.QueryRow(ctx, `SELECT pid, xact_start, (extract(epoch FROM clock_timestamp() - xact_start) * 1e6)::bigint,
		        backend_type || ': ' || coalesce(left(regexp_replace(query, '\s+', ' ', 'g'), 64), ''),
		        coalesce(wait_event_type || ':' || wait_event, 'none')
		   FROM pg_stat_activity
		  WHERE datname = current_database() AND backend_xmin IS NOT NULL AND xact_start IS NOT NULL AND pid <> pg_backend_pid()
		  ORDER BY xact_start LIMIT 1`).Scan(&pid, &since, &us, &who, &waited)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("polling pg_stat_activity: %w", err)
		}
		if pid != cur.pid || !since.Equal(cur.since) {
			cur = snapshotHold{pid: pid, since: since, who: who}
		}
		cur.longest = time.Duration(us) * time.Microsecond
		if !slices.Contains(cur.waits, waited) {
			cur.waits = append(cur.waits, waited)
		}
		if cur.longest > held.longest {
			*held = cur
			held.waits = slices.Clone(cur.waits)
		}
	}
}

func errOr(err error, format string, args ...any) error {
	if err != nil {
		return err
	}
	return fmt.Errorf(format, args...)
}

// machine describes where the figures come from.
func machine(pg, redis string) []string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name\t: "); ok {
				cpu = v
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		if len(f) > 1 {
			kb, _ := strconv.Atoi(f[1])
			mem = fmt.Sprintf("%.0f GiB", float64(kb)/1024/1024)
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return []string{
		fmt.Sprintf("%s, %d CPUs, %s RAM, Linux %s", cpu, runtime.NumCPU(), mem, strings.TrimSpace(string(kernel))),
		fmt.Sprintf("pg_lease %s (this tree's newest script), PostgreSQL %s (fsync on, unix socket), Redis %s (unix socket), etcd embedded (loopback), %s, pgx",
			model.PgLease.Version(), pg, redis, runtime.Version()),
	}
}

// keepAlives: each client holds ten names under one session (an etcd
// lease with the ten keys) and keeps them alive with one call after
// another; Ops counts names kept alive (ten a call), so that the figure
// compares with renews' (one name a call).
func keepAlives(ctx context.Context, s System, names []string, clients int, d time.Duration) (Result, error) {
	keep := func(c Client, _, _ int) (bool, error) {
		ok, err := c.(Keeper).KeepAll(ctx)
		if err != nil || !ok {
			return false, errOr(err, "keep-alive failed")
		}
		return true, nil
	}
	var held []Keeper
	r, err := parallel(ctx, s, clients, d, func(c Client, i int) error {
		k, ok := c.(Keeper)
		if !ok {
			return fmt.Errorf("%s keeps no names alive with one call", s.Name)
		}
		if err := k.HoldAll(ctx, "k"+strconv.Itoa(i), names[500+i*10:510+i*10], time.Minute); err != nil {
			return err
		}
		held = append(held, k)
		return warm(c, i, keep)
	}, keep)
	// leave the names free for the next system
	if via, cerr := s.Connect(ctx); cerr == nil {
		for _, k := range held {
			if derr := k.DropAll(ctx, via); derr != nil && err == nil {
				err = derr
			}
		}
		via.Close()
	} else if err == nil {
		err = cerr
	}
	r.Ops *= 10
	r.Workload = "keep-alive"
	return r, err
}
