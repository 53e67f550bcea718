package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The parts a backend's CPU time is split into, each named by the
// functions that begin it. A sample counts for the part of the innermost
// such function on its stack: a sample in the UPDATE run by PL/pgSQL
// counts for "statement run", one in PL/pgSQL's own code for PL/pgSQL.
var profileParts = []struct {
	name  string
	funcs []string
}{
	{"subtransaction begin and end", []string{"BeginInternalSubTransaction", "ReleaseCurrentSubTransaction", "RollbackAndReleaseCurrentSubTransaction"}},
	{"SET search_path (GUC save, set, restore)", []string{"NewGUCNestLevel", "set_config_option", "set_config_option_ext", "AtEOXact_GUC", "recomputeNamespacePath", "assign_search_path", "check_search_path", "ProcessGUCArray"}},
	{"commit", []string{"CommitTransactionCommand"}},
	{"transaction start", []string{"StartTransactionCommand"}},
	{"statement run (the UPDATE, the index scan)", []string{"standard_ExecutorRun"}},
	{"statement setup (executor start)", []string{"standard_ExecutorStart", "CreateExecutorState", "ExecInitNode"}},
	{"statement teardown (executor end)", []string{"standard_ExecutorEnd", "FreeExecutorState"}},
	{"plan cache lookups", []string{"GetCachedPlan", "SPI_plan_get_cached_plan", "RevalidateCachedQuery", "CheckCachedPlan", "CachedPlanIsSimplyValid"}},
	{"SPI", []string{"_SPI_execute_plan", "SPI_execute_plan_with_paramlist", "SPI_connect", "SPI_connect_ext", "SPI_finish"}},
	{"PL/pgSQL expressions", []string{"exec_eval_simple_expr", "exec_eval_expr", "exec_eval_boolean"}},
	{"PL/pgSQL statements and function entry", []string{"plpgsql_exec_function", "plpgsql_call_handler"}},
	{"table function result", []string{"ExecMakeTableFunctionResult"}},
	{"SECURITY DEFINER call", []string{"fmgr_security_definer"}},
	{"client I/O", []string{"pq_getbyte", "secure_read", "secure_write", "pq_flush", "socket_flush", "pq_getmessage", "internal_flush", "pq_endmessage"}},
	{"protocol messages (parse, bind, describe)", []string{"exec_bind_message", "exec_parse_message", "exec_describe_portal_message", "exec_describe_statement_message"}},
	{"background processes (WAL writer, checkpointer)", []string{"WalWriterMain", "CheckpointerMain", "BackgroundWriterMain", "AutoVacLauncherMain", "AutoVacWorkerMain"}},
	{"backend main loop", []string{"PostgresMain"}},
}

const profileOther = "kernel only (scheduler, interrupts: no PostgreSQL frame)"

// Profile is where PostgreSQL's CPU time went during a workload, per
// operation.
type Profile struct {
	Result  Result
	Samples map[string]int // by part
	Total   int
	Hz      int
	Window  time.Duration
}

// PerOp is a part's CPU time per operation.
func (p Profile) PerOp(part string) time.Duration {
	n := p.Samples[part]
	if part == "" {
		n = p.Total
	}
	ops := p.Result.PerSec() * p.Window.Seconds()
	if ops == 0 {
		return 0
	}
	return time.Duration(float64(n) / float64(p.Hz) / ops * float64(time.Second))
}

// profileRun runs a workload for phase while perf samples every CPU (with
// DWARF call stacks, which work on binaries built without frame
// pointers), and splits the postgres processes' samples into parts.
func profileRun(ctx context.Context, work string, phase time.Duration, run func() (Result, error)) (Profile, error) {
	const hz = 499
	window := phase - 2*time.Second
	data := filepath.Join(work, "perf.data")
	defer os.Remove(data)
	type done struct {
		r   Result
		err error
	}
	ch := make(chan done, 1)
	go func() { r, err := run(); ch <- done{r, err} }()
	time.Sleep(time.Second)
	rec := exec.CommandContext(ctx, "perf", "record", "-q", "-e", "cpu-clock", "-F", fmt.Sprint(hz), "--call-graph", "dwarf,32768", "-a",
		"-o", data, "--", "sleep", fmt.Sprint(window.Seconds()))
	out, recErr := rec.CombinedOutput()
	d := <-ch
	if recErr != nil {
		return Profile{}, fmt.Errorf("perf record: %w\n%s(install Debian's linux-perf; perf needs perf_event_paranoid <= 1 or root)", recErr, out)
	}
	if d.err != nil {
		return Profile{}, d.err
	}
	script := exec.CommandContext(ctx, "perf", "script", "-i", data, "--comm", "postgres", "-F", "comm,ip,sym")
	stdout, err := script.StdoutPipe()
	if err != nil {
		return Profile{}, err
	}
	if err := script.Start(); err != nil {
		return Profile{}, err
	}
	p := Profile{Result: d.r, Samples: map[string]int{}, Hz: hz, Window: window}
	err = splitSamples(stdout, func(part string) { p.Samples[part]++; p.Total++ })
	if werr := script.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("perf script: %w", werr)
	}
	return p, err
}

// splitSamples reads perf script's output (a line naming the process, then
// one line per frame, innermost first, then a blank line) and calls add
// with the part of each sample.
func splitSamples(r io.Reader, add func(part string)) error {
	partOf := map[string]string{}
	for _, p := range profileParts {
		for _, f := range p.funcs {
			partOf[f] = p.name
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	part, in := "", false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			if in {
				add(cmp.Or(part, profileOther))
			}
			part, in = "", false
		case !in:
			in = true // the line naming the process
		case part == "":
			// "address symbol" (the symbol may carry a suffix: "+0x12", " (inlined)")
			if f := strings.Fields(line); len(f) >= 2 {
				part = partOf[strings.SplitN(f[1], "+", 2)[0]]
			}
		}
	}
	if in {
		add(cmp.Or(part, profileOther))
	}
	return sc.Err()
}

// profileSection is the breakdown of pg_lease and the floor per major.
func profileSection(majors []int, lease, floor []Profile, versions []string) string {
	var b strings.Builder
	b.WriteString("# Where a backend's CPU time goes: pg_lease against the floor\n\n")
	fmt.Fprintf(&b, "Acquire + release cycles, 8 clients, sync off. `perf record -e cpu-clock -F 499 --call-graph dwarf -a` over %s of each workload, the postgres processes' samples split by the innermost of the functions that begin each part, and divided by the cycles done meanwhile. The servers are the pinned npm builds (they keep their symbols). Sampling with call stacks costs CPU itself: the absolute figures are inflated, the parts' proportions and the difference between the columns are what to read.\n\n", lease[0].Window)
	b.WriteString("| part, µs per cycle |")
	for _, m := range majors {
		fmt.Fprintf(&b, " PG%d pg_lease | PG%d floor |", m, m)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|---:|", len(majors)) + "\n")
	parts := []string{}
	for _, p := range profileParts {
		parts = append(parts, p.name)
	}
	parts = append(parts, profileOther, "")
	for _, part := range parts {
		used := part == ""
		for i := range majors {
			used = used || lease[i].Samples[part] > 0 || floor[i].Samples[part] > 0
		}
		if !used {
			continue // (no sample in any column)
		}
		name := part
		if part == "" {
			name = "**total**"
		}
		fmt.Fprintf(&b, "| %s |", name)
		for i := range majors {
			fmt.Fprintf(&b, " %.1f | %.1f |", float64(lease[i].PerOp(part))/1e3, float64(floor[i].PerOp(part))/1e3)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for i, m := range majors {
		fmt.Fprintf(&b, "- PG%d (%s): pg_lease %.0f cycles/s, the floor %.0f cycles/s while sampled.\n", m, versions[i], lease[i].Result.PerSec(), floor[i].Result.PerSec())
	}
	return b.String()
}

// profiles runs the profile on each major.
func profiles(ctx context.Context, o options, names []string, work string) (string, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return "", fmt.Errorf("perf is not installed: apt-get install linux-perf")
	}
	var lease, floor []Profile
	var versions []string
	for _, major := range o.majors {
		s, err := startServer(ctx, os.Getenv("PG_CONFIG"), major, true, work)
		if err != nil {
			return "", err
		}
		_, _, leaseOff, floorOff := leaseSystems(s.DSN())
		for _, x := range []struct {
			sys System
			out *[]Profile
		}{{leaseOff, &lease}, {floorOff, &floor}} {
			say("profiling %s (%s) on PostgreSQL %s for %s", x.sys.Name, x.sys.Durable, s.Version, o.phase)
			p, err := profileRun(ctx, work, o.phase, func() (Result, error) { return cycles(ctx, x.sys, names, 8, o.phase) })
			if err != nil {
				s.Stop()
				return "", err
			}
			*x.out = append(*x.out, p)
		}
		versions = append(versions, s.Version)
		s.Stop()
	}
	return profileSection(o.majors, lease, floor, versions), nil
}
