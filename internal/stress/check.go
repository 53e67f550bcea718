package stress

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/era"
)

// Violation is a place where the history breaks a guarantee.
type Violation struct {
	Rule   string
	Detail string
	Ops    []Op
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", v.Rule, v.Detail)
	for _, o := range v.Ops {
		b.WriteString("\n    " + o.String())
	}
	return b.String()
}

// Tolerance covers the rounding of server timestamps to microseconds.
const tol = time.Millisecond

// Slack is how long a lease may be free while a blocking acquire waits on
// it before the checker calls the wait's timeout wrong: the poll interval
// plus scheduling on a loaded machine.
const Slack = 300 * time.Millisecond

// WaitOvershoot is how much longer than max_wait a blocking acquire may
// take (the last poll, commit, scheduling) before the checker calls it
// unbounded.
const WaitOvershoot = time.Second

// holding is one holding period of a name: one epoch, one owner.
type holding struct {
	epoch   int64
	owner   string
	founder Op        // the acquire that started it
	at      time.Time // server time of that acquire's write
	exps    []expiry  // expires_at over time: the acquire's, then each ok renew's
	release *Op       // the ok release that ended it, if any
}

// expiry is an expires_at value, the server time it was written and the
// time its writer's call returned (by which it was committed).
type expiry struct {
	v, at, seen time.Time
	op          Op
}

func (h *holding) final() time.Time { return h.exps[len(h.exps)-1].v }

// state is what lease.inspect could show between two changes.
type state struct {
	at, seen time.Time // the change that began it: written at, committed by
	h        *holding  // nil: unknown, or released when released is set
	exp      int       // index into h.exps
	released bool
	epoch    int64 // released at this epoch
	// purged: a purge may have deleted the row while this state lasted,
	// so inspect may show the name unknown, and its holder not_owner
	purged bool
	cause  Op
}

type checker struct {
	out []Violation
}

func (c *checker) fail(rule, format string, args ...any) {
	var ops []Op
	var rest []any
	for _, a := range args {
		if o, ok := a.(Op); ok {
			ops = append(ops, o)
		} else {
			rest = append(rest, a)
		}
	}
	c.out = append(c.out, Violation{Rule: rule, Detail: fmt.Sprintf(format, rest...), Ops: ops})
}

func (c *checker) failOps(rule string, detail string, ops ...Op) {
	c.out = append(c.out, Violation{Rule: rule, Detail: detail, Ops: ops})
}

// Rules are the guarantees the checker checks, each in a function of its
// own below.
var Rules = []string{
	"acquire-result", "unique-epoch", "epochs-grow", "ok-from-holder", "renew-result",
	"no-revival", "release-live", "no-overlap", "idempotent-acquire", "refusal-justified",
	"wait-bounded", "wait-sees-free", "status-justified", "inspect-agrees",
	"table-keeps-epochs", "table-agrees", "guard-justified", "guard-fences",
}

// Check checks a history and the final table (by name) and returns the
// violations found. Names with a call of unknown outcome get only the
// checks that cannot be misled by a missing call.
func Check(ops []Op, final map[string]Row) []Violation {
	c := &checker{}
	byName := map[string][]Op{}
	var purges []Op
	for _, o := range ops {
		if o.Kind == Purge {
			// a purge has no name: it may touch every name
			if o.Err == "" {
				purges = append(purges, o)
			}
			continue
		}
		byName[o.Name] = append(byName[o.Name], o)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		row, ok := final[n]
		c.name(n, byName[n], purges, row, ok)
	}
	return c.out
}

// nameCheck is what the rules of one name share: its calls, its holding
// periods and the states inspect could have shown.
type nameCheck struct {
	*checker
	name    string
	ops     []Op
	purges  []Op // every purge that did not fail (it may have committed)
	row     Row
	haveRow bool
	certain bool // no call of unknown outcome
	hs      []*holding
	byEpoch map[int64]*holding
	renews  []Op // ok renews, by the time they wrote
	states  []state
	span    time.Duration // longest time from a change's write to its commit
}

func committed(o Op) bool { return !o.RolledBack && !o.Unknown && o.Err == "" }

func (c *checker) name(name string, ops []Op, purges []Op, row Row, haveRow bool) {
	n := &nameCheck{checker: c, name: name, ops: ops, purges: purges, row: row, haveRow: haveRow, certain: true, byEpoch: map[int64]*holding{}}
	for _, o := range ops {
		if o.Unknown {
			n.certain = false
		}
	}
	n.holdings() // acquire-result, unique-epoch
	n.epochsGrow()
	n.endings() // ok-from-holder, renew-result
	n.noRevival()
	n.releaseLive()
	n.noOverlap()
	n.buildStates()
	n.guardFences()
	for _, o := range ops {
		n.waitBounded(o)
		if o.RolledBack || o.Unknown || !n.certain {
			continue
		}
		ws := n.possible(o.Start, o.End)
		switch {
		case o.Kind == Acquire && o.Err == "" && o.Acquired:
			n.idempotentAcquire(o, ws)
		case o.Kind == Acquire && o.Err == "" && !o.Acquired:
			n.refusalJustified(o, ws)
		case o.Kind == Acquire && o.MaxWait > 0 && o.Err == "57014":
			n.waitSeesFree(o)
		case (o.Kind == Renew || o.Kind == Release) && o.Err == "" && o.Status != "ok":
			n.statusJustified(o, ws)
		case o.Kind == Guard && o.Err == "":
			n.guardJustified(o, ws)
		case o.Kind == Guard && o.Err == "55000":
			n.statusJustified(o, ws)
		case o.Kind == Inspect && o.Err == "":
			n.inspectAgrees(o, ws)
		}
	}
	n.tableKeepsEpochs()
	if n.certain {
		n.tableAgrees()
	}
}

// holdings makes the holding periods from the acquires that succeeded.
// Rules acquire-result (an acquired lease has an epoch and an expiry) and
// unique-epoch (one owner per epoch).
func (n *nameCheck) holdings() {
	groups := map[int64][]Op{}
	for _, o := range n.ops {
		if o.Kind == Acquire && committed(o) && o.Acquired {
			if o.RetEpoch == nil || o.Expires == nil {
				n.failOps("acquire-result", "acquired but no epoch or expires_at", o)
				continue
			}
			groups[*o.RetEpoch] = append(groups[*o.RetEpoch], o)
		}
	}
	for e, g := range groups {
		slices.SortFunc(g, func(a, b Op) int { return a.Start.Compare(b.Start) })
		f := g[0]
		for _, o := range g[1:] {
			if o.Owner != f.Owner {
				n.failOps("unique-epoch", fmt.Sprintf("two owners acquired %s at epoch %d", n.name, e), f, o)
			}
		}
		h := &holding{epoch: e, owner: f.Owner, founder: f, at: f.Expires.Add(-f.TTL)}
		h.exps = []expiry{{v: *f.Expires, at: h.at, seen: f.End, op: f}}
		n.hs = append(n.hs, h)
		n.byEpoch[e] = h
	}
	slices.SortFunc(n.hs, func(a, b *holding) int { return a.at.Compare(b.at) })
}

// epochsGrow: each new holder's epoch is above the last, purges or not,
// and when every call's outcome is known and no purge ran in between,
// exactly the next one. (After a purge, a name starts above the highest
// epoch any purged name had.)
func (n *nameCheck) epochsGrow() {
	for i, h := range n.hs {
		if i > 0 && h.epoch <= n.hs[i-1].epoch {
			n.failOps("epochs-grow", fmt.Sprintf("%s: epoch %d acquired after epoch %d", n.name, h.epoch, n.hs[i-1].epoch), n.hs[i-1].founder, h.founder)
		}
		var since time.Time
		if i > 0 {
			since = n.hs[i-1].at
		}
		if n.certain && !n.purgedBetween(since, h.founder.End) {
			want := int64(1)
			if i > 0 {
				want = n.hs[i-1].epoch + 1
			}
			// (from 0.3.0, a grant in a new era, after a crash, a restart
			// or a promotion, takes the first epoch of the era's band)
			if h.epoch != want && !(h.epoch > want && (h.epoch-1)%era.Width == 0) {
				n.failOps("epochs-grow", fmt.Sprintf("%s: a new holder got epoch %d, the next epoch is %d (or a later era's first)", n.name, h.epoch, want), h.founder)
			}
		}
	}
}

// endings attaches the ok releases and renews to their holding periods.
// Rules ok-from-holder (an ok renew or release comes from the holder of
// that epoch, once for a release, not before the holding began) and
// renew-result (an ok renew has an expiry).
func (n *nameCheck) endings() {
	for _, o := range n.ops {
		if !committed(o) || (o.Kind != Renew && o.Kind != Release) || o.Status != "ok" {
			continue
		}
		h := n.byEpoch[o.Epoch]
		if h == nil {
			n.failOps("ok-from-holder", fmt.Sprintf("%s ok for %s epoch %d, which nobody acquired", o.Kind, n.name, o.Epoch), o)
			continue
		}
		if h.owner != o.Owner {
			n.failOps("ok-from-holder", fmt.Sprintf("%s ok for %s epoch %d by %s, held by %s", o.Kind, n.name, o.Epoch, o.Owner, h.owner), h.founder, o)
			continue
		}
		if o.Kind == Release {
			if h.release != nil {
				n.failOps("ok-from-holder", fmt.Sprintf("%s epoch %d released twice", n.name, o.Epoch), *h.release, o)
				continue
			}
			rel := o
			h.release = &rel
			continue
		}
		if o.Expires == nil {
			n.failOps("renew-result", "renew ok without expires_at", o)
			continue
		}
		if o.Expires.Add(-o.TTL).Before(h.at.Add(-tol)) {
			n.failOps("ok-from-holder", "renewed before the holding began", h.founder, o)
		}
		n.renews = append(n.renews, o)
	}
	slices.SortFunc(n.renews, func(a, b Op) int { return a.Expires.Add(-a.TTL).Compare(b.Expires.Add(-b.TTL)) })
}

// noRevival: an ok renew finds the lease live (not lapsed, not released);
// each extends its holding period's expiry.
func (n *nameCheck) noRevival() {
	for _, r := range n.renews {
		h := n.byEpoch[r.Epoch]
		at := r.Expires.Add(-r.TTL)
		prev := h.exps[len(h.exps)-1]
		if !prev.v.After(at.Add(-tol)) {
			n.failOps("no-revival", fmt.Sprintf("renewed %s epoch %d at %s, after it lapsed at %s", n.name, r.Epoch, at.Format("15:04:05.000000"), prev.v.Format("15:04:05.000000")), prev.op, r)
		}
		if h.release != nil && at.After(h.release.End.Add(tol)) {
			n.failOps("no-revival", "renewed after it was released", *h.release, r)
		}
		h.exps = append(h.exps, expiry{v: *r.Expires, at: at, seen: r.End, op: r})
	}
}

// releaseLive: an ok release finds the lease live.
func (n *nameCheck) releaseLive() {
	for _, h := range n.hs {
		if h.release != nil && !h.final().After(h.release.Start.Add(-tol)) {
			n.failOps("release-live", fmt.Sprintf("released %s epoch %d although it lapsed at %s", n.name, h.epoch, h.final().Format("15:04:05.000000")), h.exps[len(h.exps)-1].op, *h.release)
		}
	}
}

// noOverlap: a holding period begins only after the one before it was
// released or lapsed, and nobody renews a period once the next began.
func (n *nameCheck) noOverlap() {
	for i, h := range n.hs[:max(0, len(n.hs)-1)] {
		next := n.hs[i+1]
		for _, e := range h.exps[1:] {
			if e.at.After(next.at.Add(tol)) {
				n.failOps("no-overlap", fmt.Sprintf("%s epoch %d renewed after epoch %d began", n.name, h.epoch, next.epoch), next.founder, e.op)
			}
		}
		switch {
		case next.owner == h.owner && (next.epoch-1)/era.Width > (h.epoch-1)/era.Width:
			// the holder's own re-acquire in a later era (pg_lease 0.5.0: the
			// fault that began it may have lost the holder's release, so its
			// re-acquire is a new grant): the holder traded its period for
			// the new one, by its own call (a renewal of the old one after
			// it began fails above)
		case h.release != nil:
			if next.at.Before(h.release.Start.Add(-tol)) {
				n.failOps("no-overlap", fmt.Sprintf("%s epoch %d began before epoch %d was released", n.name, next.epoch, h.epoch), next.founder, *h.release)
			}
		case n.mayHaveEnded(h, next.at):
			// a release or renew by the holder whose outcome is unknown
			// (its connection died) may have ended or shortened the period
		case next.at.Before(h.final().Add(-tol)):
			n.failOps("no-overlap", fmt.Sprintf("%s epoch %d began at %s while epoch %d was held until %s", n.name, next.epoch,
				next.at.Format("15:04:05.000000"), h.epoch, h.final().Format("15:04:05.000000")), h.exps[len(h.exps)-1].op, next.founder)
		}
	}
}

// mayHaveEnded reports whether a release or renew of h's epoch, whose
// outcome is unknown, began before t: it may have released the lease or
// shortened it, so h's last known expiry does not bound it.
func (n *nameCheck) mayHaveEnded(h *holding, t time.Time) bool {
	for _, o := range n.ops {
		if o.Unknown && (o.Kind == Release || o.Kind == Renew) && o.Epoch == h.epoch && o.Start.Before(t.Add(tol)) {
			return true
		}
	}
	return false
}

// purgedBetween reports whether a purge ran (in part) between a and b.
func (n *nameCheck) purgedBetween(a, b time.Time) bool {
	for _, p := range n.purges {
		if p.Start.Before(b.Add(tol)) && p.End.After(a.Add(-tol)) {
			return true
		}
	}
	return false
}

// purgeable reports whether a purge with that grace, running until t,
// may delete the row of state st: released, or lapsed for grace by t.
func purgeable(st state, grace time.Duration, t time.Time) bool {
	return st.released || (st.h != nil && !st.purged && !st.h.exps[st.exp].v.Add(grace).After(t.Add(tol)))
}

// buildStates lists the states inspect could have shown, in order: unknown
// from the beginning, then one per change, and after a purge that may
// have deleted the row, the same state marked purged.
func (n *nameCheck) buildStates() {
	n.states = append(n.states, state{})
	for _, h := range n.hs {
		for k, e := range h.exps {
			n.states = append(n.states, state{at: e.at, seen: e.seen, h: h, exp: k, cause: e.op})
		}
		if h.release != nil {
			n.states = append(n.states, state{at: h.release.Start, seen: h.release.End, released: true, epoch: h.epoch + 1, cause: *h.release})
		}
	}
	slices.SortStableFunc(n.states[1:], func(a, b state) int { return a.at.Compare(b.at) })
	n.setSpan()
	for _, p := range n.purges {
		// the state in effect when the purge returned may be gone from
		// then on (a copy marked purged); one it replaced during the
		// purge may have been gone in part of its time (marked itself)
		last := 0
		for i := 1; i < len(n.states) && !n.states[i].at.After(p.End); i++ {
			last = i
		}
		for i := max(1, n.first(p.Start)); i < last; i++ {
			if n.states[i+1].seen.After(p.Start) && purgeable(n.states[i], p.Grace, p.End) {
				n.states[i].purged = true
			}
		}
		if st := n.states[last]; last > 0 && !st.purged && purgeable(st, p.Grace, p.End) {
			from := p.Start
			if !st.released {
				from = later(from, st.h.exps[st.exp].v.Add(p.Grace))
			}
			// the purge deletes the row only once the state is written
			// and committed: its copy is certain no earlier than both
			cp := st
			cp.at, cp.seen, cp.purged, cp.cause = later(from, st.at), later(p.End, st.seen), true, p
			n.states = slices.Insert(n.states, last+1, cp)
		}
	}
	n.setSpan()
}

// setSpan: a state's window ends when the next change was committed, which
// can be long after that change was written (a blocking acquire's call):
// look back that far, and no further, for states that reach into a call.
func (n *nameCheck) setSpan() {
	for _, st := range n.states[1:] {
		n.span = max(n.span, st.seen.Sub(st.at))
	}
}

// window is a state that may have been visible during part [lo, hi] of a call.
type window struct {
	st     state
	lo, hi time.Time
}

// first is the index of the first state that may reach into a call
// starting at s.
func (n *nameCheck) first(s time.Time) int {
	i := sort.Search(len(n.states), func(i int) bool { return i > 0 && !n.states[i].at.Before(s.Add(-n.span-tol)) })
	return max(0, i-1)
}

// possible returns the states that may have been visible at some time in
// [s, f], with the part of [s, f] in which each may have been.
func (n *nameCheck) possible(s, f time.Time) []window {
	var out []window
	for i := n.first(s); i < len(n.states); i++ {
		st := n.states[i]
		if i > 0 && st.at.After(f.Add(tol)) {
			break
		}
		lo := st.at
		if i == 0 {
			lo = s
		}
		hi := f
		if i+1 < len(n.states) {
			hi = n.states[i+1].seen
		}
		lo, hi = later(lo, s), earlier(hi, f)
		if !hi.Before(lo.Add(-tol)) {
			out = append(out, window{st, lo, hi})
		}
	}
	return out
}

func heldIn(w window) bool { return w.st.h != nil && w.lo.Before(w.st.h.exps[w.st.exp].v.Add(tol)) }

func lapsedIn(w window) bool {
	return w.st.h != nil && !w.hi.Before(w.st.h.exps[w.st.exp].v.Add(-tol))
}

// waitBounded: a blocking acquire returns within max_wait (and a little),
// whatever its outcome, and whether or not other calls' outcomes are known.
func (n *nameCheck) waitBounded(o Op) {
	if o.Kind == Acquire && o.MaxWait > 0 && !o.Unknown && o.End.Sub(o.Start) > o.MaxWait+WaitOvershoot {
		n.failOps("wait-bounded", fmt.Sprintf("a blocking acquire with max_wait %s took %s", o.MaxWait, o.End.Sub(o.Start).Round(time.Millisecond)), o)
	}
}

// idempotentAcquire: an acquire that returns an existing holding period
// was made by its holder while it held it, and repeats its expiry.
func (n *nameCheck) idempotentAcquire(o Op, ws []window) {
	if o.RetEpoch == nil || o.Expires == nil {
		return // acquire-result has it
	}
	h := n.byEpoch[*o.RetEpoch]
	if h == nil || h.founder.ID == o.ID {
		return
	}
	for _, w := range ws {
		if w.st.h == h && heldIn(w) && h.exps[w.st.exp].v.Equal(*o.Expires) {
			return
		}
	}
	n.failOps("idempotent-acquire", fmt.Sprintf("%s returned epoch %d as if held by %s, which it was not then, or with another expiry", n.name, *o.RetEpoch, o.Owner), h.founder, o)
}

// refusalJustified: an acquire is refused only while someone else holds
// the lease.
func (n *nameCheck) refusalJustified(o Op, ws []window) {
	for _, w := range ws {
		if w.st.h != nil && w.st.h.owner != o.Owner && heldIn(w) {
			return
		}
	}
	n.failOps("refusal-justified", fmt.Sprintf("%s refused although nobody else held it", n.name), o)
}

// waitSeesFree: a blocking acquire does not run out of time while the
// lease was certainly free for longer than Slack: after a state's change
// committed and before the next change was written, while it was unknown,
// released or lapsed.
func (n *nameCheck) waitSeesFree(o Op) {
	for i := max(1, n.first(o.Start)); i < len(n.states) && !n.states[i].at.After(o.End); i++ {
		st := n.states[i]
		if st.h != nil && st.h.owner == o.Owner {
			continue
		}
		from := st.seen
		if st.h != nil {
			from = later(from, st.h.exps[st.exp].v)
		}
		until := o.End
		if i+1 < len(n.states) {
			until = n.states[i+1].at
		}
		from, until = later(from, o.Start), earlier(until, o.End)
		if until.Sub(from) > Slack {
			n.failOps("wait-sees-free", fmt.Sprintf("%s was free for %s during the wait, which still ran out", n.name, until.Sub(from).Round(time.Millisecond)), st.cause, o)
			return
		}
	}
}

// statusJustified: a renew's or release's refusal names a state the lease
// was in during the call.
func (n *nameCheck) statusJustified(o Op, ws []window) {
	for _, w := range ws {
		switch o.Status {
		case "not_owner":
			if w.st.h == nil || w.st.h.owner != o.Owner || w.st.purged {
				return
			}
		case "epoch_mismatch":
			if w.st.h != nil && w.st.h.owner == o.Owner && w.st.h.epoch != o.Epoch {
				return
			}
		case "lapsed":
			if w.st.h != nil && w.st.h.owner == o.Owner && w.st.h.epoch == o.Epoch && lapsedIn(w) {
				return
			}
		}
	}
	n.failOps("status-justified", fmt.Sprintf("%s said %s, which no state of %s during the call explains", o.Kind, o.Status, n.name), o)
}

// inspectAgrees: inspect shows a state the lease was in during the call.
func (n *nameCheck) inspectAgrees(o Op, ws []window) {
	for _, w := range ws {
		if inspectMatches(o, w.st, heldIn(w), lapsedIn(w)) || (w.st.purged && inspectMatches(o, state{}, false, false)) {
			return
		}
	}
	n.failOps("inspect-agrees", fmt.Sprintf("inspect of %s shows a state the history does not have during the call", n.name), o)
}

// guardJustified: a guard succeeds only for the holder of that epoch while
// it holds the lease.
func (n *nameCheck) guardJustified(o Op, ws []window) {
	for _, w := range ws {
		if w.st.h != nil && w.st.h.owner == o.Owner && w.st.h.epoch == o.Epoch && heldIn(w) {
			return
		}
	}
	n.failOps("guard-justified", fmt.Sprintf("guard of %s epoch %d succeeded, but %s did not hold it then", n.name, o.Epoch, o.Owner), o)
}

// guardFences: a write made under a guard at epoch e committed before any
// later epoch of the name was granted: no acquire returned an epoch above
// e before the guarded transaction even sent its COMMIT. This holds
// whatever other calls' outcomes were.
func (n *nameCheck) guardFences() {
	for _, o := range n.ops {
		if o.Kind != Guard || !o.Written {
			continue
		}
		for _, h := range n.hs {
			if h.epoch > o.Epoch && h.founder.End.Before(o.CommitAt.Add(-tol)) {
				n.failOps("guard-fences", fmt.Sprintf("%s epoch %d was granted before the write guarded at epoch %d committed", n.name, h.epoch, o.Epoch), o, h.founder)
				break
			}
		}
	}
}

// tableKeepsEpochs: nothing acknowledged is lost, whatever else happened:
// the table's epoch is at least every epoch handed out, and past every
// release.
func (n *nameCheck) tableKeepsEpochs() {
	var top int64
	for _, h := range n.hs {
		top = max(top, h.epoch)
		if h.release != nil {
			top = max(top, h.epoch+1)
		}
	}
	if !n.haveRow && n.states[len(n.states)-1].purged {
		return // purged at the end; epochs-grow checks what came after purges
	}
	if top > 0 && (!n.haveRow || n.row.Epoch < top) {
		n.fail("table-keeps-epochs", "%s: the table has epoch %d (row: %v), but epoch %d was handed out or released into", n.name, n.row.Epoch, n.haveRow, top)
	}
}

// tableAgrees: when every outcome is known, the table holds the last
// holding period as the history left it.
func (n *nameCheck) tableAgrees() {
	row := n.row
	if len(n.hs) == 0 {
		if n.haveRow {
			n.fail("table-agrees", "%s has a row but was never acquired", n.name)
		}
		return
	}
	last := n.hs[len(n.hs)-1]
	if !n.haveRow && n.states[len(n.states)-1].purged {
		return
	}
	if !n.haveRow {
		n.fail("table-agrees", "%s has no row, but epoch %d was acquired", n.name, last.epoch)
		return
	}
	switch {
	case last.release != nil:
		if row.Owner != nil || row.Epoch != last.epoch+1 || row.Expires != nil {
			n.fail("table-agrees", "%s: row (%s, %d, %s), want released at epoch %d", n.name, str(row.Owner), row.Epoch, ts(row.Expires), last.epoch+1)
		}
	default:
		if row.Owner == nil || *row.Owner != last.owner || row.Epoch != last.epoch || row.Expires == nil || !row.Expires.Equal(last.final()) {
			n.fail("table-agrees", "%s: row (%s, %d, %s), want (%s, %d, %s)", n.name, str(row.Owner), row.Epoch, ts(row.Expires),
				last.owner, last.epoch, last.final().Format("15:04:05.000000"))
		}
	}
}

func inspectMatches(o Op, st state, held, lapsed bool) bool {
	switch {
	case st.h == nil && !st.released: // unknown
		return !o.Held && o.RetOwner == nil && o.RetEpoch == nil && o.Expires == nil
	case st.released:
		return !o.Held && o.RetOwner == nil && o.RetEpoch != nil && *o.RetEpoch == st.epoch && o.Expires == nil
	}
	h := st.h
	if o.RetOwner == nil || *o.RetOwner != h.owner || o.RetEpoch == nil || *o.RetEpoch != h.epoch || o.Expires == nil || !o.Expires.Equal(h.exps[st.exp].v) {
		return false
	}
	if o.Held {
		return held
	}
	return lapsed
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
