package faults

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pglease/pglease-gen/internal/testenv"
)

// shortClient is the one scenario whose client variant -faults.short runs
// (make test's share): the one with clients on two primaries at once. The
// runs without it take the variant in every scenario marked Client.
const shortClient = "split-brain"

// TestScenarios runs every scenario with the shipped 0.4.0, which must
// give no epoch twice, and with each variant that lacks what the scenario
// tests, which must (so the scenario can fail). Each run has traffic on
// both sides of its fault, or fails.
func TestScenarios(t *testing.T) {
	testenv.Server(t)
	if os.Geteuid() != 0 {
		t.Skip("the fault tests install the extension into the host's PostgreSQL and start servers as postgres: run as root")
	}
	o := Options{PgConfig: os.Getenv("PG_CONFIG"), Duration: *testenv.FaultsDuration, Clients: 6, Names: 4}
	if testing.Verbose() {
		o.Progress = os.Stdout
	}
	if i := slices.IndexFunc(Scenarios, func(s Scenario) bool { return s.Name == shortClient }); i < 0 || !Scenarios[i].Client || Scenarios[i].Long || Scenarios[i].HA {
		t.Fatalf("shortClient %q must name a scenario marked Client that the short run takes (not Long, not HA)", shortClient)
	}
	lossShown := false
	for _, s := range Scenarios {
		if *testenv.FaultsOnly != "" && !strings.Contains(s.Name, *testenv.FaultsOnly) {
			continue
		}
		if s.Long && *testenv.FaultsShort {
			t.Logf("left out of the short run: %s (the runs without -faults.short run it: make ha for the Patroni ones)", s.Name)
			continue
		}
		if s.HA && !*testenv.FaultsHA {
			t.Logf("left out here (-faults.ha=false): %s, whose servers Patroni runs", s.Name)
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			variants := []Variant{Shipped}
			wanted := append(slices.Clone(s.Needs), s.Loses...)
			if *testenv.FaultsShort {
				wanted = nil
				if len(s.Needs) > 0 {
					wanted = append(wanted, s.Needs[len(s.Needs)-1])
				}
				if len(s.Loses) > 0 && !lossShown {
					wanted = append(wanted, s.Loses...)
					lossShown = true
				}
			}
			if s.Client && (!*testenv.FaultsShort || s.Name == shortClient) {
				wanted = append(wanted, ThroughClient)
			}
			for _, v := range wanted {
				if !slices.ContainsFunc(variants, func(x Variant) bool { return x.Name == v.Name }) {
					variants = append(variants, v)
				}
			}
			for _, v := range variants {
				r := Run(context.Background(), o, s, v)
				t.Log(r.Line())
				if r.Err != nil {
					t.Fatalf("%s with %s: %v", s.Name, v.Name, r.Err)
				}
				is := func(x Variant) bool { return x.Name == v.Name }
				wantDoubles, wantLost := slices.ContainsFunc(s.Needs, is), slices.ContainsFunc(s.Loses, is)
				if r.Counted {
					switch {
					case wantLost && r.Lost == 0:
						t.Errorf("%s with %s: no acknowledged grant lost; the scenario cannot show what the floor buys", s.Name, v.Name)
					case !wantLost && r.Lost > 0:
						t.Errorf("%s with %s: %d acknowledged grants lost", s.Name, v.Name, r.Lost)
					}
				}
				switch {
				case wantDoubles && len(r.Doubles) == 0:
					t.Errorf("%s with %s: no double grant; the scenario cannot tell it from the shipped extension", s.Name, v.Name)
				case !wantDoubles && len(r.Doubles) > 0:
					t.Errorf("%s with %s: %d double grants, the first: %s", s.Name, v.Name, len(r.Doubles), r.Doubles[0])
				}
			}
		})
	}
}

// Line is a result as one line of a report.
func (r Result) Line() string {
	c := r.Counts
	s := fmt.Sprintf("%-18s %-24s %5d calls before, %5d after (%d grants given after, %v by the servers that took over, %d failed calls after, %d unknown of which %d given, %d warned): %d double grants",
		r.Scenario, r.Variant, c.Before, c.After, c.GrantsAfter, r.Takers, c.FailedAfter, c.Unknown, c.Settled, c.Warned, len(r.Doubles))
	if r.Counted {
		s += fmt.Sprintf(", %d acknowledged grants lost", r.Lost)
	}
	if len(r.Doubles) > 0 {
		s += "; first: " + r.Doubles[0].String()
	}
	if r.Err != nil {
		s += "; error: " + r.Err.Error()
	}
	return s
}
