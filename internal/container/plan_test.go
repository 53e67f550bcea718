package container

import (
	"fmt"
	"strings"
	"testing"
)

// TestPlanSkipsWhatNoImageHas: the local images cannot have PostgreSQL 14
// for arm64: with --pg all it is skipped and counted; an image of the
// user's runs it, and amd64 has it.
func TestPlanSkipsWhatNoImageHas(t *testing.T) {
	runs, skipped, err := Plan([]int{14, 15, 16}, "arm64", "pglease/postgres", true)
	if err != nil || fmt.Sprint(runs) != "[15 16]" || len(skipped) != 1 || skipped[0].Major != 14 || !strings.Contains(skipped[0].Skipped, "no server build") {
		t.Errorf("--pg all: run %v, skipped %+v, %v", runs, skipped, err)
	}
	if runs, skipped, err := Plan([]int{14}, "arm64", "postgres", false); err != nil || fmt.Sprint(runs) != "[14]" || len(skipped) != 0 {
		t.Errorf("an image of the user's: run %v, skipped %+v, %v", runs, skipped, err)
	}
	if runs, _, err := Plan([]int{14}, "amd64", "pglease/postgres", false); err != nil || fmt.Sprint(runs) != "[14]" {
		t.Errorf("amd64: run %v, %v", runs, err)
	}
}
