// Command bench measures pg_lease against a floor of bare UPDATEs and
// against peers (advisory locks, Redis, etcd), side by side in one run on
// one machine, and writes a Markdown table and a PNG chart. Run it with
// `make bench` (or `make bench-quick`, a smoke run with shorter phases).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
)

type options struct {
	quick    bool
	phase    time.Duration // length of one measurement
	soak     int           // cycles of the soak
	names    int           // names of the soak
	every    int           // the soak samples the table every this many cycles
	clients  int           // the soak's clients
	handoff  int           // hand-offs measured
	majors   []int         // the headline runs on each
	rounds   int           // the headline's rounds per major
	npm      bool          // the headline uses the npm build for every major
	baseline string        // -only ab: the install script to compare with
	purge    int           // names the purge deletes
	out      string
	only     string // comma-separated workloads to run (development)
}

func (o options) wants(workload string) bool {
	return o.only == "" || strings.Contains(","+o.only+",", ","+workload+",")
}

func main() {
	var o options
	flag.BoolVar(&o.quick, "quick", false, "short phases (a smoke run)")
	flag.StringVar(&o.out, "out", "results", "directory for latest.md and latest.png")
	flag.StringVar(&o.only, "only", "", "run only these workloads (cycle,renew,keep-alive,hot,hand-off,pooled,purge,soak,headline), for profiling; writes no report but soak.{md,png} and headline.md; or only one of: profile (perf, writes profile.md), ab (with -baseline), client (the Go client against bare SQL), client-ir (the clients' own instructions per cycle under valgrind), ir (instructions per operation under valgrind, with -baseline), keep-alive-cost (one session's keep-alive with 1, 100 and 10,000 names under it: backend CPU, WAL, round trips)")
	majors := flag.String("majors", "15,18", "the majors the headline (pg_lease/floor at 8 clients) runs on: pg_config's installation for its own major, the pinned npm build for the others")
	flag.BoolVar(&o.npm, "npm", false, "run the headline on the pinned npm build of every major, pg_config's too (it keeps its symbols, for perf)")
	flag.StringVar(&o.baseline, "baseline", "", "with -only ab or ir: an install script of pg_lease (rendered from an older commit) to measure this tree against, on the first of -majors")
	phase := flag.Duration("phase", 0, "length of one measurement (default 5s; 700ms with -quick)")
	flag.IntVar(&o.rounds, "rounds", 0, "rounds of the headline per major (default 3; 1 with -quick)")
	flag.IntVar(&o.soak, "soak", 0, "acquire/release cycles of the soak (default 1,000,000; 20,000 with -quick)")
	flag.IntVar(&o.names, "soak-names", 1000, "names the soak cycles over")
	flag.IntVar(&o.clients, "soak-clients", 8, "clients the soak runs (8: more backends than this machine's CPUs)")
	flag.IntVar(&o.every, "soak-every", 0, "cycles between the soak's samples of the table (default 500,000; 10,000 with -quick)")
	loop := flag.String("client-loop", "", "internal to -only client-ir: run -client-n cycles of this client (client or bare) against -client-dsn, and exit")
	loopN := flag.Int("client-n", 0, "internal to -only client-ir")
	loopDSN := flag.String("client-dsn", "", "internal to -only client-ir")
	loopWorkers := flag.Int("client-workers", 1, "with -client-loop: this many connections, each running -client-n cycles at once")
	cpuprofile := flag.String("cpuprofile", "", "write a Go CPU profile of this process (the clients' side, as with -only client) to this file; the workers' samples carry the label system (go tool pprof -tagfocus system=...)")
	flag.Parse()
	if *loop != "" {
		if err := clientLoop(*loop, *loopN, *loopWorkers, *loopDSN); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -cpuprofile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	o.phase, o.handoff = 5*time.Second, 200
	soak, every, rounds := 1_000_000, 500_000, 3
	o.purge = 1_000_000
	if o.quick {
		o.phase, o.handoff = 700*time.Millisecond, 20
		soak, every, rounds = 20_000, 10_000, 1
		o.purge = 20_000
	}
	if o.rounds == 0 {
		o.rounds = rounds
	}
	if *phase != 0 {
		o.phase = *phase
	}
	for _, m := range strings.Split(*majors, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(m))
		if err != nil || !slices.Contains(model.PgLease.Majors, n) {
			fmt.Fprintf(os.Stderr, "bench: -majors: %q is not a supported major (%v)\n", m, model.PgLease.Majors)
			os.Exit(2)
		}
		o.majors = append(o.majors, n)
	}
	if o.soak == 0 {
		o.soak = soak
	}
	if o.every == 0 {
		o.every = every
	}
	if o.soak < 10_000 || o.names < 1 || o.every < 1 || o.clients < 1 || o.rounds < 1 {
		fmt.Fprintln(os.Stderr, "bench: -soak must be at least 10,000 (the first sample), -soak-names, -soak-every, -soak-clients and -rounds positive")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Printf("[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(o options) error {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "pglease-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// the servers run as postgres when the bench runs as root
	if err := os.Chmod(work, 0o755); err != nil {
		return err
	}
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("res-%04d", i)
	}
	if o.only == "profile" {
		md, err := profiles(ctx, o, names, work)
		if err != nil {
			return err
		}
		fmt.Print("\n" + md)
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(o.out, "profile.md"), []byte(md), 0o644)
	}
	// one-off comparisons: each prints its table
	if run, ok := map[string]func() (string, error){
		"ir":              func() (string, error) { return irBench(ctx, o, work) },
		"client":          func() (string, error) { return clientBench(ctx, o, names, work) },
		"client-ir":       func() (string, error) { return clientIRBench(ctx, o, work) },
		"ab":              func() (string, error) { return abBench(ctx, o, names, work) },
		"keep-alive-cost": func() (string, error) { return keepCostBench(ctx, o, work) },
	}[o.only]; ok {
		md, err := run()
		if err != nil {
			return err
		}
		fmt.Print("\n" + md)
		return nil
	}
	if o.only != "" && !o.wants("cycle") && !o.wants("renew") && !o.wants("keep-alive") && !o.wants("hot") && !o.wants("hand-off") && !o.wants("pooled") && !o.wants("purge") && !o.wants("soak") {
		hs, err := headlines(ctx, o, names, work)
		if err != nil {
			return err
		}
		md := headlineSection(hs, o.phase) + headlineLines(hs)
		fmt.Print("\n" + md)
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(o.out, "headline.md"), []byte(md), 0o644)
	}

	// The full comparison runs on pg_config's installation.
	inst, err := pgserver.FindInstall(ctx, os.Getenv("PG_CONFIG"))
	if err != nil {
		return err
	}
	bs, err := startServer(ctx, os.Getenv("PG_CONFIG"), inst.Major, false, work)
	if err != nil {
		return err
	}
	defer bs.Stop()
	dsn, pgVersion := bs.DSN(), bs.Version
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	say("PostgreSQL %s on %s (fsync on)", pgVersion, bs.srv.Socket())

	redisSock, stopRedis, redisVersion, err := startRedis(work)
	if err != nil {
		return err
	}
	defer stopRedis()
	say("Redis %s on %s (in memory: no appendonly, no snapshots)", redisVersion, redisSock)

	etcdURL, stopEtcd, err := startEtcd(work)
	if err != nil {
		return err
	}
	defer stopEtcd()
	say("etcd (embedded) on %s", etcdURL)

	leaseOn, floorOn, leaseOff, floorOff := leaseSystems(dsn)
	systems := []System{
		leaseOn, floorOn, leaseOff, floorOff,
		{Name: "advisory lock", Durable: "sync on", Connect: func(ctx context.Context) (Client, error) {
			conn, pid, err := pgConnect(ctx, dsn, "on")
			if err != nil {
				return nil, err
			}
			return &advisory{pgLease{conn: conn, pid: pid}}, nil
		}},
		{Name: "Redis", Durable: "memory", Connect: func(ctx context.Context) (Client, error) {
			c := redis.NewClient(&redis.Options{Network: "unix", Addr: redisSock})
			return &redisClient{c: c}, c.Ping(ctx).Err()
		}},
		{Name: "etcd", Durable: "fsync", Connect: func(ctx context.Context) (Client, error) {
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 5 * time.Second})
			if err != nil {
				return nil, err
			}
			return &etcdClient{c: c}, nil
		}},
		func() System { s := goClientSystem(dsn, "on"); s.HandOffOnly = true; return s }(),
	}

	var rs []Result
	// measure runs one workload on every system it applies to.
	measure := func(workload string, applies func(System) bool, run func(System) (Result, error)) error {
		if !o.wants(workload) {
			return nil
		}
		for _, s := range systems {
			if !applies(s) || (s.HandOffOnly && workload != "hand-off") {
				continue
			}
			r, err := run(s)
			if err != nil {
				return fmt.Errorf("%s %s: %w", s.Name, workload, err)
			}
			say("%s", r)
			rs = append(rs, r)
		}
		return nil
	}
	all := func(System) bool { return true }
	for _, clients := range []int{1, 2, 8} {
		if err := measure("cycle", all, func(s System) (Result, error) { return cycles(ctx, s, names, clients, o.phase) }); err != nil {
			return err
		}
	}
	steps := []struct {
		workload string
		applies  func(System) bool
		run      func(System) (Result, error)
	}{
		// advisory locks do not expire: nothing to renew
		{"renew", func(s System) bool { return s.Name != "advisory lock" },
			func(s System) (Result, error) { return renews(ctx, s, names, 8, o.phase) }},
		// many names kept alive with one call: pg_lease's sessions, etcd's
		// lease with its keys attached
		{"keep-alive", func(s System) bool { return (s.Name == "pg_lease" || s.Name == "etcd") && !s.HandOffOnly },
			func(s System) (Result, error) { return keepAlives(ctx, s, names, 8, o.phase) }},
		{"hot", all, func(s System) (Result, error) { return hot(ctx, s, 8, o.phase) }},
		// a waiter's delay does not depend on the holder's commit durability
		{"hand-off", func(s System) bool { return s.Durable != "sync off" },
			func(s System) (Result, error) { return handoff(ctx, s, o.handoff) }},
	}
	for _, st := range steps {
		if err := measure(st.workload, st.applies, st.run); err != nil {
			return err
		}
	}
	var pooled Pooled
	if o.wants("pooled") {
		say("through PgBouncer: 64 clients on 8 server connections")
		if pooled, err = pooledRun(ctx, bs, 64, 8, o.phase); err != nil {
			return fmt.Errorf("pooled: %w", err)
		}
		if o.only != "" && !o.wants("purge") && !o.wants("soak") {
			fmt.Print("\n" + pooledSection(pooled))
			return nil
		}
	}
	var purge PurgeRun
	if o.wants("purge") {
		say("purge: filling a table with %d released and lapsed names", o.purge)
		if purge, err = purgeRun(ctx, bs, o.purge); err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		say("%s", purge)
		if o.only != "" {
			md := purgeSection(purge)
			fmt.Print("\n" + md)
			return nil
		}
	}
	if !o.wants("soak") {
		return nil
	}
	soak, err := soakRun(ctx, systems[2], admin, o.names, o.clients, o.soak, o.every, func(x SoakSample) {
		say("soak: %d cycles: table %d kB, index %d kB, %d dead, %d of %d updates not HOT, snapshot held up to %s (%s), %d autovacuums, %d autoanalyzes",
			x.Cycles, x.Table/1024, x.Index/1024, x.Dead, x.Updates-x.HOTs, x.Updates, x.Snapshot.Round(time.Millisecond), x.Holder, x.Autovacuums, x.Autoanalyzes)
	})
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	say("soak: %s", soak)
	if o.only != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		md := soakReport(soak, machine(pgVersion, redisVersion))
		fmt.Print("\n" + md)
		if err := os.WriteFile(filepath.Join(o.out, "soak.md"), []byte(md), 0o644); err != nil {
			return err
		}
		return soakChart(soak, filepath.Join(o.out, "soak.png"))
	}

	admin.Close(ctx)
	bs.Stop() // the headline starts its own servers, one at a time
	hs, err := headlines(ctx, o, names, work)
	if err != nil {
		return err
	}
	env := machine(pgVersion, redisVersion)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	md := report(rs, soak, hs, purge, pooled, env, o)
	if err := os.WriteFile(filepath.Join(o.out, "latest.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if err := chart(rs, soak, filepath.Join(o.out, "latest.png")); err != nil {
		return err
	}
	fmt.Print("\n" + md)
	return nil
}

func startRedis(dir string) (sock string, stop func(), version string, err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, "", fmt.Errorf("redis-server is not installed: apt-get install redis-server (make bench-deps does)")
	}
	out, _ := exec.Command(bin, "--version").Output()
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			version = v
		}
	}
	sock = filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return "", nil, "", err
	}
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return sock, func() { cmd.Process.Kill(); cmd.Wait() }, version, nil
}

// freePort finds a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startEtcd(dir string) (string, func(), error) {
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{filepath.Join(dir, "etcd.log")}
	var urls [2]url.URL
	for i := range urls {
		p, err := freePort()
		if err != nil {
			return "", nil, err
		}
		u, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", p))
		urls[i] = *u
	}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{urls[0]}, []url.URL{urls[0]}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{urls[1]}, []url.URL{urls[1]}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return "", nil, fmt.Errorf("etcd did not start")
	}
	return urls[1].String(), e.Close, nil
}
