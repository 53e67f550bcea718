package main

import (
	"strings"
	"testing"
)

// perf script's output for three samples: one in the UPDATE that PL/pgSQL
// runs, one in PL/pgSQL itself, one with no PostgreSQL frame at all.
const perfScript = `postgres 
	          19bd72 heap_update
	          303d19 standard_ExecutorRun
	          341052 SPI_execute_plan_with_paramlist
	           18bde plpgsql_exec_function
	           23f06 plpgsql_call_handler
	          5b5924 fmgr_security_definer
	          47dabe PostgresMain

postgres 
	           15487 exec_eval_simple_expr
	           18bde plpgsql_exec_function
	          5b5924 fmgr_security_definer
	          303d19 standard_ExecutorRun
	          47dabe PostgresMain

postgres 
	ffffffff81000000 pvm_irq_enable
	ffffffff81000100 __schedule
`

func TestSplitSamples(t *testing.T) {
	got := map[string]int{}
	if err := splitSamples(strings.NewReader(perfScript), func(p string) { got[p]++ }); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"statement run (the UPDATE, the index scan)": 1,
		"PL/pgSQL expressions":                       1,
		profileOther:                                 1,
	}
	if len(got) != len(want) {
		t.Fatalf("parts %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d samples, want %d (all: %v)", k, got[k], v, got)
		}
	}
}
