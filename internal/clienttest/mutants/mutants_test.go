// Package mutants proves that internal/clienttest's tests catch the bugs
// they are there for: it builds them with a mutated client and runs the
// test that must fail (a package of its own, so that go test runs it
// beside the client's tests instead of after them).
package mutants

import (
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// A mutant is the client with one bug put in: each edit replaces text
// that must occur exactly once in a file of the lease module. The mutated
// files live only in the test's directory; `go test -overlay` builds the
// package's tests with them in place of the real ones, so the module that
// users import carries no trace of them.
type mutant struct {
	name  string
	edits []edit
	// test is the test that must catch the bug; want, text its failure
	// must contain; args, the test's flags
	test, want string
	args       []string
}

type edit struct{ file, old, new string }

// The client's mutants, each with the test that must catch it (the
// catalogue of the client's promises: a bug its tests should catch, add a
// mutant here; TestMutantsApply checks the texts without a server).
var mutants = []mutant{
	// a keep-alive that gives up at the first failed renewal loses a
	// lease whose TTL outlasts the server's restart (and a failover:
	// TestPatroniFailover, which takes six times as long)
	{"giveup", []edit{{"session.go",
		"\tdefault:\n\t\t// transient (or a renewal not known to be durable): again soon",
		"\tcase true:\n\t\tk.lose(\"renewal failed\", err)\n\tdefault:"}},
		"TestKeepAliveAcrossRestart", "the lease was lost across the restart", nil},
	// a warned commit handed out without lease.inspect
	{"nosettle", []edit{{"client.go",
		"\t// unknown: only lease.inspect can say whether this grant was made",
		"\tif err == nil && acquired && epoch != nil {\n\t\treturn hold(*epoch, c.cfg.TTL), nil\n\t}"}},
		"TestCancelledWaitSettled", "the grant was not settled by inspect", nil},
	// a deadline counted from the reply, not from the send
	{"replyclock", []edit{
		{"session.go", "\tk.deadline = sent.Add(c.cfg.TTL - c.cfg.Margin)", "\tk.deadline = time.Now().Add(c.cfg.TTL - c.cfg.Margin)"},
		{"session.go", "\tk.deadline = sent.Add(k.c.cfg.TTL - k.c.cfg.Margin)", "\tk.deadline = time.Now().Add(k.c.cfg.TTL - k.c.cfg.Margin)"}},
		"TestDeadlineFromSend", "counted from the reply, not from the send", nil},
	// keep-alives at the connection's synchronous_commit (on): each one
	// waits for a synchronous standby, and a standby that stops answering
	// ends every lease
	{"keepaliveflush", []edit{{"session.go", "\t\tb.Queue(keepAliveOffSQL)\n", ""}},
		"TestKeepAliveNeedsNoStandby", "lost while the synchronous standby did not answer", nil},
	// the era check that looks only at the names the client holds: a
	// release the fault lost stays held by the session
	{"lostrelease", []edit{{"session.go", "\t\tif k.c.byName[name] == nil && !k.c.acquiring[name] {", "\t\tif false {"}},
		"TestLostReleaseUndone", "is still the session's", nil},
	// the keep-alive's count of released names unread: a name another
	// session released stays believed
	{"releasedunread", []edit{{"session.go", "released != nil && *released > k.released.Load()", "released != nil && false"}},
		"TestNamesCheckedWhenReleasedBehind", "is still believed at its deadline", nil},
	// a grant answered after the check of the session's names took its
	// list of leases, left unchecked (finding 8)
	{"inflightunchecked", []edit{{"session.go", "recheck = !k.looked.IsZero() && l.sent.Before(k.looked)", "recheck = false"}},
		"TestGrantInFlightCheckedWithTheEra", "nothing checked it", nil},
	// every grant in flight during a check ended, without a look after
	// its answer (the client before this one: safe, but a busy session's
	// first grants after a restart all ended)
	{"inflightended", []edit{{"session.go", "st, err := k.c.inspect(context.Background(), l.Name)", "st, err := state{}, error(nil)"}},
		"TestGrantInFlightCheckedWithTheEra", "the grant committed after the check's read ended", nil},
	// every keep-alive without an era reads the whole list (0.5.0's
	// client, finding 9)
	{"nilalwayschecks", []edit{{"session.go", "era == nil && k.touchedSinceLook()", "era == nil"}},
		"TestOneCheckAfterACleanRestart", "want 1", nil},
	// the release under the session not recorded: a restart that left no
	// era again is not checked for it
	{"releaseuntouched", []edit{{"lease.go", "\tl.end(why)\n\tl.k.touch(time.Now())\n", "\tl.end(why)\n"}},
		"TestOneCheckAfterACleanRestart", "after a release under the session", nil},
	// a call's timeout counted from an earlier call's start
	{"firstcall", []edit{{"slot.go",
		"if left := s.timeout - time.Since(s.started); left > 0 {",
		"if left := s.timeout - time.Since(s.started); left > 0 && false {"}},
		"TestCallTimeout", "failed under a 1 s timeout", nil},
	// an acquire lost with its connection looked at before the session
	// that sent it is done: its grant commits after the look
	// (reported as not granted; the test sees the stray grant on the
	// server, or, once the session's era check has released it again,
	// only the wrong report)
	{"earlyinspect", []edit{{"slot.go", "\t\tif o.pid == 0 {", "\t\tif true {"}},
		"TestCutDuringCall", "cut-slow: ", nil},
	// no deadline: a partitioned holder's function runs on after the
	// server has given the name to another
	{"nodeadline", []edit{{"session.go", "func (k *keeper) deadlinePassed() { k.lose(\"deadline\", k.lastErr()) }", "func (k *keeper) deadlinePassed() {}"}},
		"TestRunsDoNotOverlap", "the two functions overlap", nil},
	// renewals on the calls' connection, behind a long call
	{"oneconn", []edit{{"client.go", "\tc.keep = newSlot(pc, cfg.CallTimeout, renewGrace)", "\tc.keep = c.calls"}},
		"TestKeepAliveWhileCallsBusy", "lost while the client's calls connection was busy", nil},
	// the lease ends only when its timer runs: a process paused past the
	// deadline acts before the timer's goroutine has run
	{"timeronly", []edit{{"lease.go", "\tif l.k.passed() {\n\t\tl.k.deadlinePassed()", "\tif false {\n\t\tl.k.deadlinePassed()"}},
		"TestPausedHolderSeesItsLoss", "acted after its deadline", nil},
	// an observer that sleeps after a release until PollMax
	{"slowobserver", []edit{{"election.go", "\t\t\t\twait = fast\n", "\t\t\t\t_ = fast\n"}},
		"TestObserversSeeEveryLeader", "missed leaders", nil},
	// a Close that leaves the leases to lapse
	{"closelapses", []edit{{"client.go", "func (c *Client) Close() error { return c.close(true) }", "func (c *Client) Close() error { return c.close(false) }"}},
		"TestCloseReleases", "still holds", nil},
	// a session's keep-alive that does not check its names when the
	// server's era changes: a grant lost in a failover stays believed
	{"noeracheck", []edit{{"session.go", "(!sameEra(era, k.era) || era == nil && k.touchedSinceLook()) {", "false {"}},
		"TestNamesCheckedWhenTheEraChanges", "still believed", nil},
	// a Release that fails under a session and is not tried again: the
	// session's keep-alives keep the name held
	{"noleftovers", []edit{{"session.go", "\t\tk.c.releaseLeftovers(k)\n", ""}},
		"TestFailedReleaseRetried", "still held", nil},
	// acquires of a name under the session not kept apart: the session
	// gives its own name back with its epoch
	{"noexclusion", []edit{{"client.go", "\tif now == nil && !busy {\n\t\tc.acquiring[name] = true\n\t}", "\tif false {\n\t\tc.acquiring[name] = true\n\t}"},
		{"client.go", "\tif busy {\n\t\treturn nil, fmt.Errorf(\"lease %q: another call", "\tif false && busy {\n\t\treturn nil, fmt.Errorf(\"lease %q: another call"}},
		"TestOneLeasePerEpoch", "broke the rule", nil},
}

// apply writes m's mutated files into dir and an overlay that swaps them
// in for the real ones; it returns the overlay's path.
func (m mutant) apply(t *testing.T, module, dir string) string {
	t.Helper()
	files := map[string]string{}
	for _, e := range m.edits {
		src, ok := files[e.file]
		if !ok {
			b, err := os.ReadFile(filepath.Join(module, e.file))
			if err != nil {
				t.Fatal(err)
			}
			src = string(b)
		}
		// the text must be there once (pgtest.Apply's rule, the scripts'
		// variants' too): a change to the client that moves it fails
		// here, not by a mutant that quietly equals the client
		src, err := pgtest.Apply(src, pgtest.Edit{Old: e.old, New: e.new})
		if err != nil {
			t.Fatalf("mutant %s: %s: %v", m.name, e.file, err)
		}
		files[e.file] = src
	}
	replace := map[string]string{}
	for f, src := range files {
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		replace[filepath.Join(module, f)] = p
	}
	b, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return overlay
}

// TestBrokenClientsAreCaught builds internal/clienttest's tests with each mutant
// of the client and runs the test that must catch it: the run must fail,
// saying so.
func TestBrokenClientsAreCaught(t *testing.T) {
	testenv.Tools(t, "go")
	module, err := filepath.Abs(filepath.Join("..", "..", "..", "lease"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			// two at a time (go test's -parallel, GOMAXPROCS): each waits
			// on its own server more than it computes
			t.Parallel()
			overlay := m.apply(t, module, t.TempDir())
			// A run that fails for another reason (a call timed out on a
			// loaded machine) shows nothing either way: it runs again, up to
			// three times in all.
			for attempt := 1; ; attempt++ {
				// the client's tests, in the parent directory
				cmd := osexec.Command("go", append([]string{"test", "-count=1", "-overlay", overlay, "-run", "^" + m.test + "$", "..", "-args"}, m.args...)...)
				cmd.Env = os.Environ()
				out, err := cmd.CombinedOutput()
				switch {
				case err == nil:
					t.Errorf("%s passed with the client mutated (%s):\n%s", m.test, m.name, out)
				case !strings.Contains(string(out), m.want) && attempt < 3:
					t.Logf("%s failed with the client mutated (%s), but not with %q: again\n%s", m.test, m.name, m.want, out)
					continue
				case !strings.Contains(string(out), m.want):
					t.Errorf("%s failed with the client mutated (%s), but not with %q, %d times:\n%s", m.test, m.name, m.want, attempt, out)
				default:
					var said []string
					for _, l := range strings.Split(string(out), "\n") {
						if strings.Contains(l, m.want) {
							said = append(said, strings.TrimSpace(l))
						}
					}
					t.Logf("%s with mutant %s failed, as it must:\n%s", m.test, m.name, strings.Join(said, "\n"))
				}
				break
			}
		})
	}
}

// TestMutantsApply checks, without a server, that every mutant's text is
// still in the client (go test -short runs it).
func TestMutantsApply(t *testing.T) {
	module, err := filepath.Abs(filepath.Join("..", "..", "..", "lease"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mutants {
		m.apply(t, module, t.TempDir())
	}
}
