package stress

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
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
	cause    Op
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

// Check checks a history and the final table (by name) and returns the
// violations found. Names with a call of unknown outcome get only the
// checks that cannot be misled by a missing call.
func Check(ops []Op, final map[string]Row) []Violation {
	c := &checker{}
	byName := map[string][]Op{}
	for _, o := range ops {
		byName[o.Name] = append(byName[o.Name], o)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		row, ok := final[n]
		c.name(n, byName[n], row, ok)
	}
	return c.out
}

func (c *checker) name(name string, ops []Op, row Row, haveRow bool) {
	certain := true
	for _, o := range ops {
		if o.Unknown {
			certain = false
		}
	}
	committed := func(o Op) bool { return !o.RolledBack && !o.Unknown && o.Err == "" }

	// Holding periods, from the acquires that succeeded.
	groups := map[int64][]Op{}
	for _, o := range ops {
		if o.Kind == Acquire && committed(o) && o.Acquired {
			if o.RetEpoch == nil || o.Expires == nil {
				c.failOps("acquire-result", "acquired but no epoch or expires_at", o)
				continue
			}
			groups[*o.RetEpoch] = append(groups[*o.RetEpoch], o)
		}
	}
	var hs []*holding
	byEpoch := map[int64]*holding{}
	for e, g := range groups {
		slices.SortFunc(g, func(a, b Op) int { return a.Start.Compare(b.Start) })
		f := g[0]
		for _, o := range g[1:] {
			if o.Owner != f.Owner {
				c.failOps("unique-epoch", fmt.Sprintf("two owners acquired %s at epoch %d", name, e), f, o)
			}
		}
		h := &holding{epoch: e, owner: f.Owner, founder: f, at: f.Expires.Add(-f.TTL)}
		h.exps = []expiry{{v: *f.Expires, at: h.at, seen: f.End, op: f}}
		hs = append(hs, h)
		byEpoch[e] = h
	}
	slices.SortFunc(hs, func(a, b *holding) int { return a.at.Compare(b.at) })
	for i, h := range hs {
		if i > 0 && h.epoch <= hs[i-1].epoch {
			c.failOps("epochs-grow", fmt.Sprintf("%s: epoch %d acquired after epoch %d", name, h.epoch, hs[i-1].epoch), hs[i-1].founder, h.founder)
		}
		if certain {
			want := int64(1)
			if i > 0 {
				want = hs[i-1].epoch + 1
			}
			if h.epoch != want {
				c.failOps("epochs-grow", fmt.Sprintf("%s: a new holder got epoch %d, the next epoch is %d", name, h.epoch, want), h.founder)
			}
		}
	}

	// ok renews and releases must come from the holder of that epoch.
	var renews []Op
	for _, o := range ops {
		if !committed(o) || (o.Kind != Renew && o.Kind != Release) || o.Status != "ok" {
			continue
		}
		h := byEpoch[o.Epoch]
		if h == nil {
			c.failOps("ok-from-holder", fmt.Sprintf("%s ok for %s epoch %d, which nobody acquired", o.Kind, name, o.Epoch), o)
			continue
		}
		if h.owner != o.Owner {
			c.failOps("ok-from-holder", fmt.Sprintf("%s ok for %s epoch %d by %s, held by %s", o.Kind, name, o.Epoch, o.Owner, h.owner), h.founder, o)
			continue
		}
		if o.Kind == Release {
			if h.release != nil {
				c.failOps("ok-from-holder", fmt.Sprintf("%s epoch %d released twice", name, o.Epoch), *h.release, o)
				continue
			}
			rel := o
			h.release = &rel
			continue
		}
		if o.Expires == nil {
			c.failOps("renew-result", "renew ok without expires_at", o)
			continue
		}
		renews = append(renews, o)
	}
	slices.SortFunc(renews, func(a, b Op) int { return a.Expires.Add(-a.TTL).Compare(b.Expires.Add(-b.TTL)) })
	for _, r := range renews {
		h := byEpoch[r.Epoch]
		at := r.Expires.Add(-r.TTL)
		prev := h.exps[len(h.exps)-1]
		if at.Before(h.at.Add(-tol)) {
			c.failOps("ok-from-holder", "renewed before the holding began", h.founder, r)
		}
		if !prev.v.After(at.Add(-tol)) {
			c.failOps("no-revival", fmt.Sprintf("renewed %s epoch %d at %s, after it lapsed at %s", name, r.Epoch, at.Format("15:04:05.000000"), prev.v.Format("15:04:05.000000")), prev.op, r)
		}
		if h.release != nil && at.After(h.release.End.Add(tol)) {
			c.failOps("no-revival", "renewed after it was released", *h.release, r)
		}
		h.exps = append(h.exps, expiry{v: *r.Expires, at: at, seen: r.End, op: r})
	}

	// Holding periods do not overlap; a release needs a live lease.
	for i, h := range hs {
		if h.release != nil && !h.final().After(h.release.Start.Add(-tol)) {
			c.failOps("release-live", fmt.Sprintf("released %s epoch %d although it lapsed at %s", name, h.epoch, h.final().Format("15:04:05.000000")), h.exps[len(h.exps)-1].op, *h.release)
		}
		if i+1 == len(hs) {
			continue
		}
		n := hs[i+1]
		for _, e := range h.exps[1:] {
			if e.at.After(n.at.Add(tol)) {
				c.failOps("no-overlap", fmt.Sprintf("%s epoch %d renewed after epoch %d began", name, h.epoch, n.epoch), n.founder, e.op)
			}
		}
		switch {
		case h.release != nil:
			if n.at.Before(h.release.Start.Add(-tol)) {
				c.failOps("no-overlap", fmt.Sprintf("%s epoch %d began before epoch %d was released", name, n.epoch, h.epoch), n.founder, *h.release)
			}
		case n.at.Before(h.final().Add(-tol)):
			c.failOps("no-overlap", fmt.Sprintf("%s epoch %d began at %s while epoch %d was held until %s", name, n.epoch,
				n.at.Format("15:04:05.000000"), h.epoch, h.final().Format("15:04:05.000000")), h.exps[len(h.exps)-1].op, n.founder)
		}
	}

	// The states inspect could have shown, in order.
	var states []state
	states = append(states, state{}) // unknown, from the beginning
	for _, h := range hs {
		for k, e := range h.exps {
			states = append(states, state{at: e.at, seen: e.seen, h: h, exp: k, cause: e.op})
		}
		if h.release != nil {
			states = append(states, state{at: h.release.Start, seen: h.release.End, released: true, epoch: h.epoch + 1, cause: *h.release})
		}
	}
	slices.SortStableFunc(states[1:], func(a, b state) int { return a.at.Compare(b.at) })
	// possible returns the states that may have been visible at some time
	// in [s, f], with the part of [s, f] in which each may have been.
	type window struct {
		st     state
		lo, hi time.Time
	}
	// A state's window ends when the next change was committed, which can be
	// long after that change was written (a blocking acquire's call): look
	// back that far, and no further, for states that reach into a call.
	var span time.Duration
	for _, st := range states[1:] {
		span = max(span, st.seen.Sub(st.at))
	}
	// first is the index of the first state that may reach into a call
	// starting at s.
	first := func(s time.Time) int {
		i := sort.Search(len(states), func(i int) bool { return i > 0 && !states[i].at.Before(s.Add(-span-tol)) })
		return max(0, i-1)
	}
	possible := func(s, f time.Time) []window {
		var out []window
		for i := first(s); i < len(states); i++ {
			st := states[i]
			if i > 0 && st.at.After(f.Add(tol)) {
				break
			}
			lo := st.at
			if i == 0 {
				lo = s
			}
			hi := f
			if i+1 < len(states) {
				hi = states[i+1].seen
			}
			lo, hi = later(lo, s), earlier(hi, f)
			if !hi.Before(lo.Add(-tol)) {
				out = append(out, window{st, lo, hi})
			}
		}
		return out
	}
	heldIn := func(w window) bool { return w.st.h != nil && w.lo.Before(w.st.h.exps[w.st.exp].v.Add(tol)) }
	lapsedIn := func(w window) bool { return w.st.h != nil && !w.hi.Before(w.st.h.exps[w.st.exp].v.Add(-tol)) }

	for _, o := range ops {
		if o.RolledBack || o.Unknown || !certain {
			continue
		}
		ws := possible(o.Start, o.End)
		switch {
		case o.Kind == Acquire && o.Err == "" && o.Acquired:
			h := byEpoch[*o.RetEpoch]
			if h == nil || h.founder.ID == o.ID {
				continue
			}
			// held already by the caller: the result repeats the lease as it is
			ok := false
			for _, w := range ws {
				if w.st.h == h && heldIn(w) && h.exps[w.st.exp].v.Equal(*o.Expires) {
					ok = true
				}
			}
			if !ok {
				c.failOps("idempotent-acquire", fmt.Sprintf("%s returned epoch %d as if held by %s, which it was not then, or with another expiry", name, *o.RetEpoch, o.Owner), h.founder, o)
			}
		case o.Kind == Acquire && o.Err == "" && !o.Acquired:
			ok := false
			for _, w := range ws {
				if w.st.h != nil && w.st.h.owner != o.Owner && heldIn(w) {
					ok = true
				}
			}
			if !ok {
				c.failOps("refusal-justified", fmt.Sprintf("%s refused although nobody else held it", name), o)
			}
		case o.Kind == Acquire && o.MaxWait > 0 && o.End.Sub(o.Start) > o.MaxWait+WaitOvershoot:
			c.failOps("wait-bounded", fmt.Sprintf("a blocking acquire with max_wait %s took %s", o.MaxWait, o.End.Sub(o.Start).Round(time.Millisecond)), o)
		case o.Kind == Acquire && o.MaxWait > 0 && o.Err == "57014":
			// Certainly free: after a state's change committed and before the
			// next change was written, while it was unknown, released or lapsed.
			for i := max(1, first(o.Start)); i < len(states) && !states[i].at.After(o.End); i++ {
				st := states[i]
				if st.h != nil && st.h.owner == o.Owner {
					continue
				}
				from := st.seen
				if st.h != nil {
					from = later(from, st.h.exps[st.exp].v)
				}
				until := o.End
				if i+1 < len(states) {
					until = states[i+1].at
				}
				from, until = later(from, o.Start), earlier(until, o.End)
				if until.Sub(from) > Slack {
					c.failOps("wait-sees-free", fmt.Sprintf("%s was free for %s during the wait, which still ran out", name, until.Sub(from).Round(time.Millisecond)), st.cause, o)
					break
				}
			}
		case (o.Kind == Renew || o.Kind == Release) && o.Err == "" && o.Status != "ok":
			ok := false
			for _, w := range ws {
				switch o.Status {
				case "not_owner":
					ok = ok || w.st.h == nil || w.st.h.owner != o.Owner
				case "epoch_mismatch":
					ok = ok || (w.st.h != nil && w.st.h.owner == o.Owner && w.st.h.epoch != o.Epoch)
				case "lapsed":
					ok = ok || (w.st.h != nil && w.st.h.owner == o.Owner && w.st.h.epoch == o.Epoch && lapsedIn(w))
				}
			}
			if !ok {
				c.failOps("status-justified", fmt.Sprintf("%s said %s, which no state of %s during the call explains", o.Kind, o.Status, name), o)
			}
		case o.Kind == Inspect && o.Err == "":
			ok := false
			for _, w := range ws {
				ok = ok || inspectMatches(o, w.st, heldIn(w), lapsedIn(w))
			}
			if !ok {
				c.failOps("inspect-agrees", fmt.Sprintf("inspect of %s shows a state the history does not have during the call", name), o)
			}
		}
	}

	// Nothing acknowledged is lost, whatever else happened: the table's
	// epoch is at least every epoch handed out, and past every release.
	var top int64
	for _, h := range hs {
		top = max(top, h.epoch)
		if h.release != nil {
			top = max(top, h.epoch+1)
		}
	}
	if top > 0 && (!haveRow || row.Epoch < top) {
		c.fail("table-keeps-epochs", "%s: the table has epoch %d (row: %v), but epoch %d was handed out or released into", name, row.Epoch, haveRow, top)
	}
	if !certain {
		return
	}
	// The table agrees with the history.
	if len(hs) == 0 {
		if haveRow {
			c.fail("table-agrees", "%s has a row but was never acquired", name)
		}
		return
	}
	last := hs[len(hs)-1]
	if !haveRow {
		c.fail("table-agrees", "%s has no row, but epoch %d was acquired", name, last.epoch)
		return
	}
	switch {
	case last.release != nil:
		if row.Owner != nil || row.Epoch != last.epoch+1 || row.Expires != nil {
			c.fail("table-agrees", "%s: row (%s, %d, %s), want released at epoch %d", name, str(row.Owner), row.Epoch, ts(row.Expires), last.epoch+1)
		}
	default:
		if row.Owner == nil || *row.Owner != last.owner || row.Epoch != last.epoch || row.Expires == nil || !row.Expires.Equal(last.final()) {
			c.fail("table-agrees", "%s: row (%s, %d, %s), want (%s, %d, %s)", name, str(row.Owner), row.Epoch, ts(row.Expires),
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
