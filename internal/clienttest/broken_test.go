package clienttest

import (
	"os"
	osexec "os/exec"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/testenv"
)

// TestBrokenClientsAreCaught builds the client with a bug put in (a build
// tag of the lease module; no real build has it) and runs the test that
// must catch it: the run must fail, saying so.
func TestBrokenClientsAreCaught(t *testing.T) {
	testenv.Tools(t, "go")
	for _, v := range []struct{ tag, test, want string }{
		// a keep-alive that gives up at the first failed renewal loses a
		// lease whose TTL outlasts the server's restart (and a failover:
		// TestPatroniFailover, which takes six times as long)
		{"pglease_broken_giveup", "TestKeepAliveAcrossRestart", "the lease was lost across the restart"},
		// a warned commit handed out without lease.inspect
		{"pglease_broken_nosettle", "TestCancelledWaitSettled", "the grant was not settled by inspect"},
		// a deadline counted from the reply, not from the send
		{"pglease_broken_replyclock", "TestDeadlineFromSend", "counted from the reply, not from the send"},
		// a call's timeout counted from an earlier call's start
		{"pglease_broken_firstcall", "TestCallTimeout", "failed under a 1 s timeout"},
		// a renewal timer that forgets the leases not yet due
		{"pglease_broken_forget", "TestManyLeasesKeptAlive", "its renewal was late"},
		// an acquire lost with its connection looked at before the session
		// that sent it is done: its grant commits after the look
		{"pglease_broken_earlyinspect", "TestCutDuringCall", "but its grant stands"},
		// no deadline: a partitioned holder's function runs on after the
		// server has given the name to another
		{"pglease_broken_nodeadline", "TestRunsDoNotOverlap", "the two functions overlap"},
		// renewals on the calls' connection, behind a long call
		{"pglease_broken_oneconn", "TestKeepAliveWhileCallsBusy", "lost while the client's calls connection was busy"},
	} {
		t.Run(v.tag, func(t *testing.T) {
			cmd := osexec.Command("go", "test", "-count=1", "-tags", v.tag, "-run", "^"+v.test+"$", ".")
			cmd.Env = os.Environ()
			out, err := cmd.CombinedOutput()
			switch {
			case err == nil:
				t.Errorf("%s passed with the client built -tags %s:\n%s", v.test, v.tag, out)
			case !strings.Contains(string(out), v.want):
				t.Errorf("%s failed with -tags %s, but not with %q:\n%s", v.test, v.tag, v.want, out)
			default:
				t.Logf("%s with -tags %s failed, as it must: %q", v.test, v.tag, v.want)
			}
		})
	}
}
