package safety

import (
	"context"
	"testing"
	"time"
)

// TestAnswersSayUntilWhen: finding 7. Every answer that says a holder
// holds a name says until when it may believe, counted from its own send
// time: expires_at - clock_timestamp() read in the same statement. For
// each such answer (a new grant, an idempotent re-acquire 1.5 s later,
// session_acquire under a session opened 1.5 s before, renew, keep_alive)
// the test sends the call, and checks that send + that span ends no later
// than the expiry the server holds (one machine: one clock). The rule of
// 0.5.0's docs, send + the TTL, is the broken variant: it must end past
// the server's expiry for the re-acquire and the session's grant (1.5 s
// past, less the time between), or the test proves nothing.
func TestAnswersSayUntilWhen(t *testing.T) {
	srv, _ := server(t)
	dsn := database(t, srv, "believe", "pg_lease")
	conn := connect(t, dsn)
	ctx := context.Background()
	const ttl = 10 * time.Second
	type answer struct {
		what    string
		sent    time.Time
		left    time.Duration // expires_at - clock_timestamp()
		expires time.Time
	}
	call := func(what, sql string, args ...any) answer {
		t.Helper()
		a := answer{what: what, sent: time.Now()}
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT a.ok, a.expires_at, a.expires_at - clock_timestamp() FROM ("+sql+") AS a(ok, expires_at)", args...).Scan(&ok, &a.expires, &a.left); err != nil || !ok {
			t.Fatalf("%s: %v %v", what, ok, err)
		}
		return a
	}
	var answers []answer
	answers = append(answers, call("a new grant", "SELECT acquired, expires_at FROM lease.acquire('n', 'w', $1)", ttl))
	time.Sleep(1500 * time.Millisecond)
	answers = append(answers, call("an idempotent re-acquire", "SELECT acquired, expires_at FROM lease.acquire('n', 'w', $1)", ttl))
	var session int64
	if err := conn.QueryRow(ctx, "SELECT session FROM lease.open_session('s', $1)", ttl).Scan(&session); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	answers = append(answers, call("session_acquire under an older session", "SELECT acquired, expires_at FROM lease.session_acquire($1, 's', 'm')", session))
	answers = append(answers, call("renew", "SELECT status = 'ok', expires_at FROM lease.renew('n', 'w', 1, $1)", ttl))
	answers = append(answers, call("keep_alive", "SELECT status = 'ok', expires_at FROM lease.keep_alive($1, 's')", session))
	for _, a := range answers {
		// (timestamptz has microseconds; the monotonic reading is dropped
		// so that both sides are wall-clock instants)
		until := a.sent.Round(0).Add(a.left)
		if until.After(a.expires.Add(time.Microsecond)) {
			t.Errorf("%s: send + (expires_at - clock_timestamp()) ends %v after the server's expiry", a.what, until.Sub(a.expires))
		}
		naive := a.sent.Round(0).Add(ttl)
		switch a.what {
		case "an idempotent re-acquire", "session_acquire under an older session":
			if past := naive.Sub(a.expires); past < time.Second {
				t.Errorf("%s: send + the TTL ends only %v past the server's expiry: the old rule's over-belief is not shown", a.what, past)
			} else {
				t.Logf("%s: the old rule (send + TTL) believes %v past the server's expiry; the answer's span ends %v before it", a.what, past.Round(time.Millisecond), a.expires.Sub(until).Round(time.Microsecond))
			}
		}
	}
}
