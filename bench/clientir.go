package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// clientIRBench counts the instructions this process executes per cycle
// (acquire and release of a free name) through the Go client and as bare
// SQL on a pgx connection: each a run of this program (-client-loop)
// under valgrind's cachegrind, one goroutine, GOMAXPROCS=1, sessions at
// synchronous_commit = off with set_floor('session'). Two lengths, and
// the difference counted, as irBench does for the server; the median of
// three runs. The timed -only client cannot tell a few per cent on this
// machine; the count moves the share by about a point. The server's
// side is the same cycle in a stand-alone backend (singleUserIR): the
// overhead is the client's extra over the whole cycle's count.
func clientIRBench(ctx context.Context, o options, work string) (string, error) {
	valgrind, err := exec.LookPath("valgrind")
	if err != nil {
		return "", errors.New("-only client-ir needs valgrind: apt-get install valgrind")
	}
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	s, dsn, err := startWithSession(ctx, o, work)
	if err != nil {
		return "", err
	}
	defer s.Stop()
	// one run's count per cycle; the median of three, since a Go
	// process's count moves by up to a fifth between runs (the garbage
	// collector's and the scheduler's share)
	once := func(mode string) (float64, error) {
		return perOp(100, 2100, func(n int) (int64, error) {
			cmd := exec.CommandContext(ctx, valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
				self, "-client-loop", mode, "-client-n", strconv.Itoa(n), "-client-dsn", dsn)
			cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				return 0, fmt.Errorf("%s, %d cycles: %w\n%s", mode, n, err, tail(string(out), 2000))
			}
			refs, err := valgrindRefs(out)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", mode, err)
			}
			return refs, nil
		})
	}
	count := func(mode string) (float64, error) {
		var runs []float64
		for range 3 {
			n, err := once(mode)
			if err != nil {
				return 0, err
			}
			runs = append(runs, n)
		}
		say("%s: %.0f, %.0f and %.0f instructions per cycle", mode, runs[0], runs[1], runs[2])
		return median(runs), nil
	}
	client, err := count("client")
	if err != nil {
		return "", err
	}
	bare, err := count("bare")
	if err != nil {
		return "", err
	}
	// the server's side of the same cycle, counted as -only ir counts it
	if err := s.srv.Shutdown(ctx); err != nil {
		return "", err
	}
	server, err := singleUserIR(ctx, s, valgrind, "session", "off", irCycles)
	if err != nil {
		return "", err
	}
	say("instructions per cycle: the Go client %.0f, bare SQL %.0f, the server %.0f", client, bare, server)
	var b strings.Builder
	fmt.Fprintf(&b, "## Instructions per cycle, the Go client against bare SQL, PostgreSQL %s, sync off, set_floor('session')\n\n", s.Version)
	b.WriteString("| | instructions per cycle |\n|---|---:|\n")
	fmt.Fprintf(&b, "| the Go client's process (lease.Client) | %.0f |\n| bare SQL's process (pgx) | %.0f |\n| the server (a stand-alone backend, as -only ir) | %.0f |\n", client, bare, server)
	fmt.Fprintf(&b, "| **the client's overhead: (client − bare) / (bare + server)** | **%.1f %%** |\n", 100*(client-bare)/(bare+server))
	return b.String(), nil
}

// clientLoop is one counted run of clientIRBench: n cycles of mode
// (client or bare) on one connection, after warmCycles untimed; with
// workers > 1, each of that many connections runs n cycles at once (for
// perf stat: what the whole machine spends on the cycles of 8 clients).
func clientLoop(mode string, n, workers int, dsn string) error {
	ctx := context.Background()
	var sys System
	switch mode {
	case "client":
		sys = goClientSystem(dsn, "off")
	case "bare":
		sys = bareSystem(dsn, "off")
	default:
		return fmt.Errorf("-client-loop: %q is neither client nor bare", mode)
	}
	workers = max(workers, 1)
	names := make([]string, 50*workers)
	for i := range names {
		names[i] = fmt.Sprintf("cir-%s-%03d", mode, i)
	}
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			c, err := sys.Connect(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for i := range warmCycles + n {
				if _, err := cycleOnce(ctx, c, names, workers, w, i); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
