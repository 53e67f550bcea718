package era

import "fmt"

// 0.4.0's rule, as the install script's enter_era() applies it. A grant is
// made in the era era_now names while that unlogged row is valid for this
// run of the server (every crash recovery empties it, a restart changes
// the run) and its band has room for the epoch; otherwise the next era is
// entered first, durably, above the highest band recorded and every epoch
// the table holds.

// Site is where a database runs: its cluster (system identifier), the
// database and its eras table (home: a restore makes new ones), the
// timeline, and the run of the server (its postmaster start).
type Site struct{ SystemID, DB, Home, TLI, Boot int64 }

// EraRow is a row of lease.eras.
type EraRow struct {
	Band, Gen, Base, TLI, N int64
	Installed               bool
	SystemID, DB, Home      int64
}

func (r EraRow) ours(s Site) bool {
	return r.SystemID == s.SystemID && r.DB == s.DB && r.Home == s.Home
}

// DB is one database's era state: its eras rows and era_now (Cached, for
// the run CacheAt).
type DB struct {
	Eras               []EraRow
	Cached             bool
	CacheBand, CacheAt int64
}

// Installed is a database just after CREATE EXTENSION on site s.
func Installed(s Site) DB {
	return DB{Eras: []EraRow{{TLI: s.TLI, Base: s.TLI, Installed: true, SystemID: s.SystemID, DB: s.DB, Home: s.Home}}}
}

func bandOf(epoch int64) int64 { return (epoch - 1) / Width }

// Settle is enter_era(need, newEra) on site s, whose leases hold epochs up
// to maxEpoch (0: none): the band grants are made in, with room for epoch
// need (0: any), entering a new era when it must.
func (d *DB) Settle(s Site, need int64, newEra bool, maxEpoch int64) (int64, error) {
	if !newEra && d.Cached && d.CacheAt == s.Boot && (need == 0 || need <= Last04(d.CacheBand)) {
		return d.CacheBand, nil
	}
	top := int64(-1)
	for _, r := range d.Eras {
		top = max(top, r.Band)
	}
	ours, installed := true, true
	var t EraRow
	for _, r := range d.Eras {
		if r.Band == top {
			ours = ours && r.ours(s)
			installed = installed && r.Installed
			t = r
		}
	}
	if !newEra && d.Cached && d.CacheBand == top && ours && !installed && t.TLI == s.TLI && (need == 0 || need <= Last04(d.CacheBand)) {
		d.CacheAt = s.Boot // a clean restart
		return d.CacheBand, nil
	}
	limit := top
	if maxEpoch > 0 {
		limit = max(limit, bandOf(maxEpoch))
	}
	if need > 0 {
		limit = max(limit, bandOf(need)-1)
	}
	own := ours && (!installed || maxEpoch == 0) // installed with rows: they came from elsewhere
	if !newEra && own && installed && t.TLI == s.TLI {
		for i := range d.Eras {
			if d.Eras[i].Band == 0 && d.Eras[i].Installed {
				d.Eras[i].Installed = false
			}
		}
		d.Cached, d.CacheBand, d.CacheAt = true, 0, s.Boot
		return 0, nil
	}
	gen, base, n := int64(-1), int64(0), int64(0)
	switch {
	case own && t.TLI == s.TLI:
		gen, base, n = t.Gen, t.Base, t.N+1
	case own && s.TLI > t.TLI && s.TLI-t.Base <= RelTLIMax:
		gen, base, n = t.Gen, t.Base, 0
	}
	if newEra {
		n = (n/NewEraStep + 1) * NewEraStep
	}
	band, err := Band04(gen, s.TLI-base, n)
	if gen < 0 || err != nil || band <= limit {
		gen, base, n = max(limit, 0)/((RelTLIMax+1)*(NMax+1))+1, 0, 0
		if s.TLI > RelTLIMax {
			base = s.TLI - 128
		}
		if newEra {
			n = NewEraStep
		}
		if band, err = Band04(gen, s.TLI-base, n); err != nil {
			return 0, fmt.Errorf("no band left for a new era: %w", err)
		}
	}
	row := EraRow{Band: band, Gen: gen, Base: base, TLI: s.TLI, N: n, SystemID: s.SystemID, DB: s.DB, Home: s.Home}
	d.Eras = append(d.Eras, row)
	d.Cached, d.CacheBand, d.CacheAt = true, band, s.Boot
	return band, nil
}

// Grant04 is acquire's epoch for a name whose row holds last (0: no row;
// taken: the row's holder is taken over, not released) on site s, whose
// leases hold epochs up to maxEpoch: at least the era's first epoch,
// within its band, settling the era first. A row's epoch is kept or
// advanced in place only while it is below its band's last (the SQL's
// UPDATE tests l.epoch < last_epoch, whether the row is released or
// lapsed), so a row settles the era for last+1; a new name for its
// first epoch.
func (d *DB) Grant04(s Site, last int64, taken bool, maxEpoch int64) (int64, error) {
	next := last
	if taken || last == 0 {
		next = last + 1
	}
	need := next
	if last != 0 {
		need = last + 1
	}
	for range 3 {
		band, err := d.Settle(s, need, false, maxEpoch)
		if err != nil {
			return 0, err
		}
		e := max(next, band*Width+1)
		if e <= Last04(band) {
			return e, nil
		}
	}
	return 0, fmt.Errorf("epoch %d finds no band", next)
}
