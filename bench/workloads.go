package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
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
	CPU      float64 // hand-off: waiter's server CPU, share of one core while waiting
}

func (r Result) PerSec() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

func (r Result) Pct(p float64) time.Duration {
	if len(r.Lat) == 0 {
		return 0
	}
	s := slices.Clone(r.Lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func (r Result) Key() string { return r.System + " (" + r.Durable + ")" }

func (r Result) String() string {
	return fmt.Sprintf("%-9s %-26s c=%d  %9.0f/s  p50 %-9s p99 %s", r.Workload, r.Key(), r.Clients, r.PerSec(), r.Pct(0.5), r.Pct(0.99))
}

// parallel runs op on clients connections for d and collects latencies.
func parallel(ctx context.Context, s System, clients int, d time.Duration, setup func(c Client, i int) error, op func(c Client, i, n int) (done bool, err error)) (Result, error) {
	cs := make([]Client, clients)
	for i := range cs {
		c, err := s.Connect(ctx)
		if err != nil {
			return Result{}, err
		}
		defer c.Close()
		if setup != nil {
			if err := setup(c, i); err != nil {
				return Result{}, err
			}
		}
		cs[i] = c
	}
	var (
		mu    sync.Mutex
		lat   []time.Duration
		ops   int
		tries int
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for i, c := range cs {
		wg.Add(1)
		go func() {
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
			lat, ops, tries = append(lat, my...), ops+done, tries+n
			mu.Unlock()
		}()
	}
	wg.Wait()
	return Result{System: s.Name, Durable: s.Durable, Clients: clients, Ops: ops, Tries: tries, Elapsed: time.Since(start), Lat: lat}, first
}

// cycles: acquire then release, each client on its own share of the names.
func cycles(ctx context.Context, s System, names []string, clients int, d time.Duration) (Result, error) {
	r, err := parallel(ctx, s, clients, d, nil, func(c Client, i, n int) (bool, error) {
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
	})
	r.Workload = "cycle"
	return r, err
}

// renews: each client holds ten names and renews them in turn.
func renews(ctx context.Context, s System, names []string, clients int, d time.Duration) (Result, error) {
	tokens := make([][]int64, clients)
	r, err := parallel(ctx, s, clients, d, func(c Client, i int) error {
		for k := range 10 {
			name := names[500+i*10+k]
			tok, ok, err := c.Acquire(ctx, name, "r"+strconv.Itoa(i), time.Minute)
			if err != nil || !ok {
				return errOr(err, "acquire of free %s failed", name)
			}
			tokens[i] = append(tokens[i], tok)
		}
		return nil
	}, func(c Client, i, n int) (bool, error) {
		k := n % 10
		ok, err := c.Renew(ctx, names[500+i*10+k], "r"+strconv.Itoa(i), tokens[i][k], time.Minute)
		if err != nil || !ok {
			return false, errOr(err, "renew failed")
		}
		return true, nil
	})
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
// is from the release's return (committed) to the waiter's return.
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
		tok, ok, err := holder.Acquire(ctx, name, "holder", time.Minute)
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

// procCPU is the CPU time a process has used (0 without /proc or a pid).
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * time.Second / 100 // clock ticks (USER_HZ = 100)
}

// Soak is what the table looks like after many cycles.
type Soak struct {
	Cycles              int
	Elapsed             time.Duration
	Early, Late         int64 // table size after 10,000 cycles and at the end
	EarlyIndex, Index   int64
	Dead, Updates, HOTs int64
}

func (s Soak) String() string {
	return fmt.Sprintf("%d cycles in %s; table %d -> %d bytes, index %d -> %d; %d dead tuples; HOT %d of %d updates",
		s.Cycles, s.Elapsed.Round(time.Second), s.Early, s.Late, s.EarlyIndex, s.Index, s.Dead, s.HOTs, s.Updates)
}

func soakRun(ctx context.Context, s System, admin *pgx.Conn, names []string, total int) (Soak, error) {
	// start from a table that has seen every name once
	out := Soak{Cycles: total}
	time.Sleep(1500 * time.Millisecond) // statistics reach the view about once a second
	var base, baseHOT int64
	if err := admin.QueryRow(ctx, "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'lease.leases'::regclass").Scan(&base, &baseHOT); err != nil {
		return out, err
	}
	const clients = 8
	start := time.Now()
	run := func(cyclesEach int) error {
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
				for n := range cyclesEach {
					name := names[(i+n*clients)%len(names)]
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
	sizes := func() (int64, int64, error) {
		var t, i int64
		err := admin.QueryRow(ctx, "SELECT pg_relation_size('lease.leases'), pg_indexes_size('lease.leases')").Scan(&t, &i)
		return t, i, err
	}
	if err := run(10_000 / clients); err != nil {
		return out, err
	}
	var err error
	if out.Early, out.EarlyIndex, err = sizes(); err != nil {
		return out, err
	}
	if err := run((total - 10_000) / clients); err != nil {
		return out, err
	}
	out.Elapsed = time.Since(start)
	time.Sleep(1500 * time.Millisecond) // statistics reach the view about once a second
	if out.Late, out.Index, err = sizes(); err != nil {
		return out, err
	}
	err = admin.QueryRow(ctx, "SELECT n_dead_tup, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'lease.leases'::regclass").Scan(&out.Dead, &out.Updates, &out.HOTs)
	out.Updates -= base
	out.HOTs -= baseHOT
	return out, err
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
		fmt.Sprintf("PostgreSQL %s (fsync on, unix socket), Redis %s (unix socket), etcd embedded (loopback), %s, pgx", pg, redis, runtime.Version()),
	}
}
