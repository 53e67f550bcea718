package clienttest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pglease/pglease-gen/lease"
)

// TestObserversSeeEveryLeader: three candidates campaign on one name
// (and the terms go to more than one of them),
// each term 150-500 ms (the first 1.5 s); two observers with the default PollMax (1 s)
// must each report every leader, in order, once, and nobody else. A
// client whose observer sleeps after a release until PollMax missed most
// of them (the 52-81 %).
func TestObserversSeeEveryLeader(t *testing.T) {
	srv := server(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := lease.Config{TTL: 2 * time.Second, PollMax: time.Second}
	var observed [2][]lease.Holder
	var received [2][]time.Time
	var owg sync.WaitGroup
	for i := range observed {
		o, _ := client(t, srv, cfg)
		seen := o.Election("observed").Observe(ctx)
		// an observer reports what it sees from its first report on (its
		// connection and LISTEN come first): the terms start after it
		if first := <-seen; first.Held || first.Err != nil {
			t.Fatalf("observer %d: first report %+v, want the name free", i, first)
		}
		owg.Add(1)
		go func() {
			defer owg.Done()
			for h := range seen {
				if h.Held {
					observed[i] = append(observed[i], h)
					received[i] = append(received[i], time.Now())
				}
			}
		}()
	}
	const terms = 16
	lengths := []time.Duration{150, 420, 230, 500, 180, 310, 270, 460} // ms, in turn
	var mu sync.Mutex
	type term struct {
		owner   string
		granted time.Time
	}
	led := map[int64]term{}
	var cwg sync.WaitGroup
	for range 3 {
		c, _ := client(t, srv, cfg)
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			e := c.Election("observed")
			for {
				l, err := e.Campaign(ctx)
				if err != nil {
					return // ctx ended
				}
				mu.Lock()
				n := len(led)
				if n >= terms {
					mu.Unlock()
					cancel()
					return
				}
				led[l.Epoch] = term{l.Owner, time.Now()}
				mu.Unlock()
				d := lengths[n%len(lengths)] * time.Millisecond
				if n == 0 {
					// the first term begins on a name free since the
					// observers' first look, which they then look at up
					// to PollMax apart (docs/client.md): a shorter term
					// may fall between two looks (CI: one of 150 ms did)
					d = cfg.PollMax + 500*time.Millisecond
				}
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
				e.Resign(context.Background())
				// another candidate's turn
				select {
				case <-time.After(cfg.PollMin + 50*time.Millisecond):
				case <-ctx.Done():
				}
			}
		}()
	}
	cwg.Wait()
	owg.Wait()
	var epochs []int64
	candidates := map[string]bool{}
	for e, tm := range led {
		epochs = append(epochs, e)
		candidates[strings.SplitN(tm.owner, "#", 2)[1][:12]] = true // the client's token
	}
	slices.Sort(epochs)
	if len(candidates) < 2 {
		t.Errorf("the %d terms went to %d of the 3 candidates: the test did not change leaders", len(led), len(candidates))
	}
	for i := range observed {
		var got []int64
		var lags []time.Duration
		for j, h := range observed[i] {
			if h.Epoch > epochs[len(epochs)-1] {
				continue // the grant after the last term, which ended the test
			}
			got = append(got, h.Epoch)
			if tm, ok := led[h.Epoch]; !ok || h.Owner != cfgOwner(tm.owner) {
				t.Errorf("observer %d reported %s at epoch %d; the leader of that epoch was %q", i, h.Owner, h.Epoch, tm.owner)
			} else {
				lags = append(lags, received[i][j].Sub(tm.granted))
			}
		}
		var missed []int64
		for _, e := range epochs {
			if !slices.Contains(got, e) {
				missed = append(missed, e)
			}
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("observer %d reported epochs out of order or twice: %v", i, got)
		}
		if len(missed) > 0 {
			t.Errorf("observer %d missed leaders: %d of %d (epochs %v; led %v)", i, len(missed), len(epochs), missed, epochs)
		}
		slices.Sort(lags)
		if len(lags) > 0 {
			t.Logf("observer %d: %d of %d leaders, reported %v (median) to %v (max) after the grant", i, len(got), len(epochs), lags[len(lags)/2].Round(100*time.Microsecond), lags[len(lags)-1].Round(100*time.Microsecond))
		}
	}
}

// cfgOwner is the Config.Owner part of a grant's owner.
func cfgOwner(owner string) string { o, _, _ := strings.Cut(owner, "#"); return o }

const holderEnv = "PGLEASE_CLIENTTEST_HOLDER"

// pausedHolder is the holder process of TestPausedHolderSeesItsLoss: it
// takes the name in Run, says "held", and then does what a worker does,
// without sleeping: checks its contexts and goes on. The first check
// after a gap of more than 300 ms (the test stopped it) is reported:
// whether the clock read just before the check was past the lease's
// deadline, whether the client had ended the lease (its Done closed)
// before the check, and what Err of Run's context and of the lease's
// said. Then
// it returns, and takes the name again, until its input closes.
func pausedHolder() int {
	c, err := lease.New(os.Getenv("PGLEASE_DSN"), lease.Config{TTL: time.Second, Owner: "paused", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer c.Orphan()
	stdin := bufio.NewScanner(os.Stdin)
	for stdin.Scan() { // one line per round
		err := c.Run(context.Background(), "paused", func(ctx context.Context, l *lease.Lease) error {
			d, ok := ctx.Deadline()
			fmt.Printf("held %d deadline-reported=%v\n", l.Epoch, ok && d.Equal(l.Deadline()))
			prev := time.Now()
			for {
				now := time.Now()
				ended := false
				select {
				case <-l.Context().Done():
					ended = true
				default:
				}
				runErr, leaseErr := ctx.Err(), l.Context().Err()
				if now.Sub(prev) > 300*time.Millisecond {
					fmt.Printf("resumed past=%v ended=%v run=%v lease=%v\n", !now.Before(l.Deadline()), ended, runErr, leaseErr)
					return nil
				}
				prev = now
			}
		})
		var lost *lease.LostError
		if err != nil && !errors.As(err, &lost) {
			fmt.Println("error", err)
			return 1
		}
	}
	return 0
}

// TestPausedHolderSeesItsLoss stops a holder process (SIGSTOP) for 1.2 s,
// past its 1 s TTL, and continues it: the first check of its contexts
// after continuing, made with the clock already past the lease's deadline,
// must report the loss in both Run's context and the lease's, although no
// timer of the client has run yet. The holder says whether the client had
// ended the lease (its Done closed) just before that check; only rounds
// where it had not prove anything, and the test goes on until five such
// rounds, for up to 300 pauses (7 minutes): beside two CPU hogs about one
// pause in five is such a round, and in a loaded CI run, where it was one
// in fifteen, 60 pauses were once too few. A client whose lease ends only
// when its timer runs acts in every such round.
func TestPausedHolderSeesItsLoss(t *testing.T) {
	srv := server(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command(self)
	// one P: the lease's timer can run only once the holder's loop
	// yields it, so the loop's first check after continuing comes first
	// (with two, an idle P ran the timer at once in about half the pauses)
	cmd.Env = append(os.Environ(), holderEnv+"=1", "PGLEASE_DSN="+srv.DSN("postgres"), "GOMAXPROCS=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	out := bufio.NewScanner(outPipe)
	line := func() string {
		t.Helper()
		if !out.Scan() {
			t.Fatalf("the holder process ended: %v", out.Err())
		}
		if l := out.Text(); !strings.HasPrefix(l, "error") {
			return l
		} else {
			t.Fatalf("the holder: %s", l)
		}
		return ""
	}
	const want = 5
	past, acted, untimed, round := 0, 0, 0, 0
	for ; untimed < want && round < 300; round++ {
		fmt.Fprintln(in, "go")
		held := line()
		if !strings.HasPrefix(held, "held ") {
			t.Fatalf("round %d: the holder said %q", round, held)
		}
		if !strings.HasSuffix(held, "deadline-reported=true") {
			t.Errorf("round %d: Run's context does not report the lease's deadline: %s", round, held)
		}
		time.Sleep(100 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(1200 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGCONT)
		got := line()
		if !strings.Contains(got, "past=true") {
			t.Logf("round %d: the first check after continuing was before the deadline (%s)", round, got)
			continue
		}
		past++
		if strings.Contains(got, "ended=false") {
			untimed++
		}
		if strings.Contains(got, "run=<nil>") || strings.Contains(got, "lease=<nil>") {
			acted++
			t.Errorf("round %d: the holder acted after its deadline: its first check after continuing, with its clock past the deadline, said %s", round, got)
		} else if !strings.Contains(got, "run=context deadline exceeded lease=context deadline exceeded") {
			t.Errorf("round %d: %s; want context.DeadlineExceeded from both", round, got)
		}
	}
	in.Close()
	if untimed < want {
		t.Fatalf("in %d pauses, %d checks came after the deadline, %d of them before the client's timer had ended the lease (want %d): the test proved too little", round, past, untimed, want)
	}
	t.Logf("%d pauses, %d past the deadline, %d before the client's timer ran: the first check reported the loss in %d", round, past, untimed, past-acted)
}

// TestCloseReleases: Close releases what the client holds (a waiter
// takes the name at once, with the next epoch); Orphan leaves it to
// lapse. A Run under a client that closes returns ErrClosed.
func TestCloseReleases(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	a, _ := client(t, srv, lease.Config{TTL: 30 * time.Second})
	l, err := a.TryAcquire(ctx, "closed")
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() {
		ran <- a.Run(ctx, "closed-run", func(ctx context.Context, _ *lease.Lease) error { <-ctx.Done(); return nil })
	}()
	for !inspect(t, srv, "closed-run").held {
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"closed", "closed-run"} {
		if r := inspect(t, srv, name); r.held {
			t.Errorf("after Close the server still holds %q for %s", name, *r.owner)
		}
	}
	if !errors.Is(l.Err(), lease.ErrClosed) {
		t.Errorf("the lease's Err after Close is %v; want ErrClosed", l.Err())
	}
	select {
	case err := <-ran:
		if !errors.Is(err, lease.ErrClosed) {
			t.Errorf("Run under a closed client returned %v; want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Run did not return within 5 s of Close")
	}
	b, _ := client(t, srv, lease.Config{TTL: 30 * time.Second})
	l2, err := b.TryAcquire(ctx, "closed")
	if err != nil || l2.Epoch != l.Epoch+1 {
		t.Fatalf("after Close another client's TryAcquire: %v (epoch %v; want %d)", err, l2, l.Epoch+1)
	}
	if err := b.Orphan(); err != nil {
		t.Fatal(err)
	}
	if r := inspect(t, srv, "closed"); !r.held {
		t.Error("after Orphan the name is free; it must lapse at its TTL")
	}
}

// TestAlreadyHeld: a client asked for a name it holds says so at once,
// from TryAcquire and from Acquire (which would otherwise wait for
// itself), and takes it again once released.
func TestAlreadyHeld(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	c, _ := client(t, srv, lease.Config{TTL: 10 * time.Second})
	l, err := c.TryAcquire(ctx, "mine")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryAcquire(ctx, "mine"); !errors.Is(err, lease.ErrAlreadyHeld) {
		t.Errorf("TryAcquire of a held name: %v; want ErrAlreadyHeld", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Acquire(wctx, "mine"); !errors.Is(err, lease.ErrAlreadyHeld) {
		t.Errorf("Acquire of a held name: %v; want ErrAlreadyHeld", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if l2, err := c.TryAcquire(ctx, "mine"); err != nil || l2.Epoch <= l.Epoch {
		t.Errorf("after Release, TryAcquire: %v, %v", l2, err)
	}
}

// TestElection: etcd's election calls. Leader says who leads with its
// epoch (ErrNoLeader before anyone does), Campaign waits until this
// client leads, Resign hands over at once without ending the other
// candidate's campaign, Observe reports each leader.
func TestElection(t *testing.T) {
	srv := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ca, _ := client(t, srv, lease.Config{TTL: 10 * time.Second, Owner: "a"})
	cb, _ := client(t, srv, lease.Config{TTL: 10 * time.Second, Owner: "b"})
	a, b := ca.Election("primary"), cb.Election("primary")
	if _, err := a.Leader(ctx); !errors.Is(err, lease.ErrNoLeader) {
		t.Fatalf("Leader before any campaign: %v; want ErrNoLeader", err)
	}
	seen := b.Observe(ctx)
	la, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := a.Campaign(ctx); err != nil || again != la {
		t.Errorf("Campaign while leading: %v, %v; want the current term", again, err)
	}
	h, err := b.Leader(ctx)
	if err != nil || !h.Held || h.Owner != "a" || h.Epoch != la.Epoch {
		t.Errorf("Leader: %+v, %v; want a at epoch %d", h, err, la.Epoch)
	}
	// the observer reports a's term before a resigns (on a loaded
	// machine its first look can come later than a's whole term)
	var leaders []string
	for h := range seen {
		if h.Held {
			leaders = append(leaders, fmt.Sprintf("%s@%d", h.Owner, h.Epoch))
			break
		}
	}
	won := make(chan *lease.Lease, 1)
	go func() {
		l, err := b.Campaign(ctx)
		if err != nil {
			t.Error(err)
		}
		won <- l
	}()
	time.Sleep(100 * time.Millisecond)
	resigned := time.Now()
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Lease() != nil || la.Err() == nil {
		t.Error("after Resign a still has a term")
	}
	var lb *lease.Lease
	select {
	case lb = <-won:
	case <-ctx.Done():
		t.Fatal("b did not win after a resigned")
	}
	t.Logf("b led %v after a's Resign began", time.Since(resigned).Round(100*time.Microsecond))
	if lb == nil || lb.Epoch <= la.Epoch || b.Lease() != lb {
		t.Fatalf("b's term %v after a's at %d", lb, la.Epoch)
	}
	for h := range seen {
		if h.Held {
			leaders = append(leaders, fmt.Sprintf("%s@%d", h.Owner, h.Epoch))
		}
		if len(leaders) == 2 {
			break
		}
	}
	if want := fmt.Sprintf("[a@%d b@%d]", la.Epoch, lb.Epoch); fmt.Sprint(leaders) != want {
		t.Errorf("observed %v; want %s", leaders, want)
	}
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Resign(ctx); err != nil {
		t.Errorf("Resign when not leading: %v", err)
	}
}
