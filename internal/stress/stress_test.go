package stress

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/era"
	"github.com/pglease/pglease-gen/internal/leaseclient"
	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgserver"
	"github.com/pglease/pglease-gen/internal/pgtest"
)

// server starts a throwaway local server with pg_lease installed in the
// installation.
func server(t *testing.T) (*pgserver.Server, pgserver.Install) { return pgtest.Local(t) }

func exec(t *testing.T, dsn string, sqls ...string) {
	t.Helper()
	if err := pgserver.Exec(context.Background(), dsn, sqls...); err != nil {
		t.Fatal(err)
	}
}

func stress(t *testing.T, dsn string, d, maxTTL time.Duration, fencing bool) ([]Op, []Violation) {
	t.Helper()
	cfg := Config{DSN: dsn, Clients: 8, Names: 3, Duration: d, Seed: 42, MaxTTL: maxTTL, Fencing: fencing}.Defaults()
	ops, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	final, err := Table(context.Background(), dsn, cfg.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	if fencing {
		if err := Writes(context.Background(), dsn, cfg.Prefix, ops); err != nil {
			t.Fatal(err)
		}
	}
	return ops, Check(ops, final)
}

func TestStressHasNoViolations(t *testing.T) {
	srv, _ := server(t)
	exec(t, srv.DSN("postgres"), "CREATE DATABASE stress")
	dsn := srv.DSN("stress")
	exec(t, dsn, leaseclient.CreateSQL)
	ops, vs := stress(t, dsn, 8*time.Second, 0, true)
	for _, v := range vs[:min(len(vs), 10)] {
		t.Error(v)
	}
	if len(vs) > 0 {
		t.Fatalf("%d violations in %d operations", len(vs), len(ops))
	}
	// the run must have exercised what the checker checks
	seen := map[string]int{}
	for _, o := range ops {
		if o.Kind == Acquire && o.MaxWait > 0 && o.Acquired {
			seen["acquired after waiting"]++
		}
		switch {
		case o.Kind == Acquire && o.Acquired && !o.RolledBack:
			seen["acquired"]++
			if *o.RetEpoch > 1 {
				seen["acquired at epoch > 1"]++
			}
		case o.Kind == Acquire && o.Err == "" && !o.Acquired:
			seen["refused"]++
		case o.Err == "57014":
			seen["wait ran out"]++
		case o.Status != "":
			seen[string(o.Kind)+" "+o.Status]++
		case o.Kind == Inspect && o.Held:
			seen["inspect held"]++
		case o.Kind == Guard && o.Written:
			seen["guarded write"]++
		case o.Kind == Purge && o.Purged > 0:
			seen["purged"]++
		}
	}
	t.Logf("%d operations: %v", len(ops), seen)
	for _, k := range []string{"acquired", "acquired at epoch > 1", "refused", "acquired after waiting", "renew ok", "renew lapsed", "renew not_owner", "renew epoch_mismatch", "release ok", "release not_owner", "inspect held",
		"guarded write", "guard not_owner", "guard lapsed", "purged"} {
		if seen[k] == 0 {
			t.Errorf("the run never saw %q", k)
		}
	}
}

// TestCheckerCatchesBrokenVariants runs the stress against pg_lease with a
// bug put in, one at a time, and expects the checker to name the bug.
func TestCheckerCatchesBrokenVariants(t *testing.T) {
	srv, inst := server(t)
	for _, v := range Variants {
		t.Run(v.Name, func(t *testing.T) {
			ext := "pg_lease_" + v.Name
			pgtest.Variant(t, inst, ext, model.PgLease.ScriptFile(), v.Edits...)
			exec(t, srv.DSN("postgres"), "CREATE DATABASE "+v.Name)
			dsn := srv.DSN(v.Name)
			exec(t, dsn, "CREATE EXTENSION "+ext)
			// short leases, so that lapses (and the bugs around them) are common
			ops, vs := stress(t, dsn, 6*time.Second, 100*time.Millisecond, v.Fencing)
			rules := map[string]int{}
			for _, x := range vs {
				rules[x.Rule]++
			}
			t.Logf("%s (%s): %d operations, violations by rule: %v", v.Name, v.Bug, len(ops), rules)
			caught := false
			for _, x := range vs {
				if slices.Contains(v.Rules, x.Rule) {
					t.Logf("first %s violation:\n%s", x.Rule, x)
					caught = true
					break
				}
			}
			if !caught {
				t.Errorf("the checker missed %s: want %v violations, got %v", v.Bug, v.Rules, rules)
			}
		})
	}
}

func TestCheckerOnHandMadeHistories(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p := func(v int64) *int64 { return &v }
	tp := func(ms int) *time.Time { x := at(ms); return &x }
	sp := func(s string) *string { return &s }
	acq := func(id int, owner string, s, e int, ttl int, ok bool, epoch int64) Op {
		o := Op{ID: id, Kind: Acquire, Name: "n", Owner: owner, TTL: time.Duration(ttl) * time.Millisecond, Start: at(s), End: at(e), Acquired: ok}
		if ok {
			o.RetEpoch, o.Expires = p(epoch), tp(s+1+ttl)
		}
		return o
	}
	// a holds epoch 1 from 1 ms to 101 ms; b takes over at 150 ms under epoch 2
	good := []Op{
		acq(0, "a", 0, 2, 100, true, 1),
		acq(1, "b", 50, 52, 100, false, 0),
		acq(2, "b", 150, 152, 100, true, 2),
		{ID: 3, Kind: Renew, Name: "n", Owner: "a", Epoch: 1, TTL: time.Second, Start: at(160), End: at(161), Status: "not_owner"},
		{ID: 4, Kind: Inspect, Name: "n", Start: at(170), End: at(171), Held: true, RetOwner: sp("b"), RetEpoch: p(2), Expires: tp(251)},
	}
	final := map[string]Row{"n": {Owner: sp("b"), Epoch: 2, Expires: tp(251)}}
	if vs := Check(good, final); len(vs) > 0 {
		t.Fatalf("a correct history has violations: %v", vs)
	}
	// b's takeover in a new era (after a crash): the first epoch of its
	// band, not the next; any other jump is still a violation
	newEra := slices.Clone(good)
	newEra[2] = acq(2, "b", 150, 152, 100, true, era.Width+1)
	newEra[4].RetEpoch = p(era.Width + 1)
	if vs := Check(newEra, map[string]Row{"n": {Owner: sp("b"), Epoch: era.Width + 1, Expires: tp(251)}}); len(vs) > 0 {
		t.Errorf("a takeover at a new era's first epoch has violations: %v", vs)
	}
	newEra[2].RetEpoch, newEra[4].RetEpoch = p(era.Width+2), p(era.Width+2)
	if vs := Check(newEra, map[string]Row{"n": {Owner: sp("b"), Epoch: era.Width + 2, Expires: tp(251)}}); len(vs) == 0 || vs[0].Rule != "epochs-grow" {
		t.Errorf("a takeover at a new era's second epoch: want epochs-grow, got %v", vs)
	}
	// a release whose connection died (outcome unknown) but which
	// committed: b takes the name before a's last known expiry, under the
	// epoch the release advanced to; no overlap can be claimed
	ended := []Op{
		acq(0, "a", 0, 2, 100, true, 1),
		{ID: 1, Kind: Release, Name: "n", Owner: "a", Epoch: 1, Start: at(20), End: at(25), Unknown: true},
		acq(2, "b", 50, 52, 100, true, 2),
	}
	if vs := Check(ended, map[string]Row{"n": {Owner: sp("b"), Epoch: 2, Expires: tp(151)}}); len(vs) > 0 {
		t.Errorf("a history ended by a release of unknown outcome has violations: %v", vs)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// a releases (the row is released at epoch 2), a purge deletes it, an
	// inspect shows the name unknown, and b starts above the mark, at 3
	purged := []Op{
		acq(0, "a", 0, 2, 100, true, 1),
		{ID: 1, Kind: Release, Name: "n", Owner: "a", Epoch: 1, Start: at(10), End: at(11), Status: "ok"},
		{ID: 2, Kind: Purge, Start: at(20), End: at(22), Purged: 1},
		{ID: 3, Kind: Inspect, Name: "n", Start: at(30), End: at(31)},
		{ID: 4, Kind: Renew, Name: "n", Owner: "a", Epoch: 1, TTL: ms(100), Start: at(32), End: at(33), Status: "not_owner"},
		acq(5, "b", 40, 42, 100, true, 3),
	}
	if vs := Check(purged, map[string]Row{"n": {Owner: sp("b"), Epoch: 3, Expires: tp(141)}}); len(vs) > 0 {
		t.Errorf("a history with a purge has violations: %v", vs)
	}
	// through a pooler, a's release waits 400 ms in the pooler's queue; a
	// purge ends while it waits, and b's blocking acquire (also queued) runs
	// out. The name was never certainly free during b's wait: the release
	// may have committed only as it returned, and the purge could delete
	// the row only after that.
	queued := []Op{
		acq(0, "a", 0, 2, 10_000, true, 1),
		{ID: 1, Kind: Release, Name: "n", Owner: "a", Epoch: 1, Start: at(100), End: at(500), Status: "ok"},
		{ID: 2, Kind: Purge, Start: at(90), End: at(110)},
		{ID: 3, Kind: Acquire, Name: "n", Owner: "b", TTL: ms(100), MaxWait: ms(80), Start: at(95), End: at(495), Err: "57014"},
	}
	if vs := Check(queued, map[string]Row{"n": {Epoch: 2}}); len(vs) > 0 {
		t.Errorf("a release and a purge overlapping a timed-out wait: %v", vs)
	}
	// a purge that forgot its mark: b restarts at 1
	purged[5] = acq(5, "b", 40, 42, 100, true, 1)
	if vs := Check(purged, map[string]Row{"n": {Owner: sp("b"), Epoch: 1, Expires: tp(141)}}); !slices.ContainsFunc(vs, func(v Violation) bool { return v.Rule == "unique-epoch" || v.Rule == "epochs-grow" }) {
		t.Errorf("a purged name restarting at epoch 1: want an epochs-grow or unique-epoch violation, got %v", vs)
	}
	// a purge cannot explain a held lease shown unknown
	held := []Op{acq(0, "a", 0, 2, 100, true, 1), {ID: 1, Kind: Purge, Start: at(20), End: at(22)}, {ID: 2, Kind: Inspect, Name: "n", Start: at(30), End: at(31)}}
	if vs := Check(held, map[string]Row{"n": {Owner: sp("a"), Epoch: 1, Expires: tp(101)}}); len(vs) == 0 || vs[0].Rule != "inspect-agrees" {
		t.Errorf("a held lease shown unknown after a purge: want inspect-agrees, got %v", vs)
	}
	cases := []struct {
		name  string
		edit  func([]Op) []Op
		final func(Row) Row // nil keeps the final table
		rule  string
	}{
		{"acquired without an epoch", func(h []Op) []Op { h[2].RetEpoch = nil; return h }, nil, "acquire-result"},
		{"same epoch twice", func(h []Op) []Op { h[2].RetEpoch = p(1); return h }, nil, "unique-epoch"},
		{"an epoch skipped", func(h []Op) []Op { h[2].RetEpoch = p(3); return h }, nil, "epochs-grow"},
		{"renew ok from another owner", func(h []Op) []Op {
			return append(h, Op{ID: 5, Kind: Renew, Name: "n", Owner: "c", Epoch: 2, TTL: ms(100), Start: at(180), End: at(181), Status: "ok", Expires: tp(280)})
		}, nil, "ok-from-holder"},
		{"renew ok without an expiry", func(h []Op) []Op {
			return append(h, Op{ID: 5, Kind: Renew, Name: "n", Owner: "b", Epoch: 2, TTL: ms(100), Start: at(180), End: at(181), Status: "ok"})
		}, nil, "renew-result"},
		{"renew revives a lapsed lease", func(h []Op) []Op {
			return append(h, Op{ID: 5, Kind: Renew, Name: "n", Owner: "a", Epoch: 1, TTL: ms(100), Start: at(120), End: at(121), Status: "ok", Expires: tp(220)})
		}, nil, "no-revival"},
		{"release of a lapsed lease", func(h []Op) []Op {
			return append(h, Op{ID: 5, Kind: Release, Name: "n", Owner: "a", Epoch: 1, Start: at(120), End: at(121), Status: "ok"})
		}, nil, "release-live"},
		{"takeover before lapse", func(h []Op) []Op { h[2] = acq(2, "b", 60, 62, 100, true, 2); return h }, nil, "no-overlap"},
		{"re-acquire with another expiry", func(h []Op) []Op { return append(h, acq(5, "b", 180, 181, 100, true, 2)) }, nil, "idempotent-acquire"},
		{"refused while free", func(h []Op) []Op { h[1] = acq(1, "b", 120, 122, 100, false, 0); return h }, nil, "refusal-justified"},
		// a blocking acquire that succeeded, but far past its max_wait
		{"blocking acquire past max_wait", func(h []Op) []Op {
			return append(h, Op{ID: 5, Kind: Acquire, Name: "n", Owner: "c", TTL: ms(100), MaxWait: ms(100), Start: at(200), End: at(1400), Acquired: true, RetEpoch: p(3), Expires: tp(1499)})
		}, func(Row) Row { return Row{Owner: sp("c"), Epoch: 3, Expires: tp(1499)} }, "wait-bounded"},
		// the same with another call's outcome unknown: still checked
		{"blocking acquire past max_wait, history uncertain", func(h []Op) []Op {
			return append(h,
				Op{ID: 5, Kind: Acquire, Name: "n", Owner: "c", TTL: ms(100), MaxWait: ms(100), Start: at(200), End: at(1400), Err: "57014"},
				Op{ID: 6, Kind: Inspect, Name: "n", Start: at(1500), End: at(1501), Unknown: true})
		}, nil, "wait-bounded"},
		{"wait ran out while free", func(h []Op) []Op {
			return append(h, Op{ID: 5, Kind: Acquire, Name: "n", Owner: "c", TTL: ms(100), MaxWait: time.Second, Start: at(300), End: at(1300), Err: "57014"})
		}, nil, "wait-sees-free"},
		{"lapsed said to a non-holder", func(h []Op) []Op { h[3].Status = "lapsed"; return h }, nil, "status-justified"},
		{"inspect of a state that never was", func(h []Op) []Op { h[4].RetOwner = sp("a"); return h }, nil, "inspect-agrees"},
		{"table lost an epoch", func(h []Op) []Op { return h }, func(r Row) Row { r.Epoch = 1; return r }, "table-keeps-epochs"},
		{"table has another expiry", func(h []Op) []Op { return h }, func(r Row) Row { r.Expires = tp(300); return r }, "table-agrees"},
		// a's lease lapsed at 101
		{"guard after the lease lapsed", func(h []Op) []Op {
			return append(h, Op{ID: 5, Kind: Guard, Name: "n", Owner: "a", Epoch: 1, Start: at(180), End: at(185), CommitAt: at(184), Written: true, Expires: tp(101)})
		}, nil, "guard-justified"},
		// b was granted epoch 2 (returned at 152) while a's guarded
		// transaction was open until 190
		{"guarded write committed after the next epoch was granted", func(h []Op) []Op {
			return append(h, Op{ID: 5, Kind: Guard, Name: "n", Owner: "a", Epoch: 1, Start: at(10), End: at(191), CommitAt: at(190), Written: true, Expires: tp(101)})
		}, nil, "guard-fences"},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.rule] = true
		h := tc.edit(append([]Op(nil), good...))
		fin := final
		if tc.final != nil {
			fin = map[string]Row{"n": tc.final(final["n"])}
		}
		vs := Check(h, fin)
		found := false
		for _, v := range vs {
			found = found || v.Rule == tc.rule
		}
		if !found {
			t.Errorf("%s: want a %s violation, got %v", tc.name, tc.rule, fmt.Sprint(vs))
		}
	}
	for _, r := range Rules {
		if !covered[r] {
			t.Errorf("rule %s has no hand-made history that breaks it", r)
		}
	}
}

// TestRunStopsCleanlyWhenAClientCannotConnect lets only two of four
// clients connect (a role's connection limit): Run fails, records nothing
// and leaves no client connected.
func TestRunStopsCleanlyWhenAClientCannotConnect(t *testing.T) {
	srv, _ := server(t)
	exec(t, srv.DSN("postgres"), "CREATE DATABASE limited", "CREATE ROLE two LOGIN CONNECTION LIMIT 2")
	dsn := srv.DSN("limited")
	exec(t, dsn, leaseclient.CreateSQL, "GRANT USAGE ON SCHEMA lease TO two")
	limited := strings.Replace(dsn, "user="+srv.User, "user=two", 1)
	ops, err := Run(context.Background(), Config{DSN: limited, Clients: 4, Names: 2, Duration: 3 * time.Second, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "client 2") {
		t.Fatalf("err = %v; want client 2's connect failure", err)
	}
	if len(ops) > 0 {
		t.Errorf("a run that could not start recorded %d operations", len(ops))
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// a closed connection's backend exits after the client's Terminate
	// reaches it: on a loaded machine, a moment after Run returned; one
	// that Run left open stays
	var n int
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE usename = 'two'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 || time.Now().After(end) {
			break
		}
	}
	if n > 0 {
		t.Errorf("%d clients still connected 10 s after Run returned", n)
	}
}
