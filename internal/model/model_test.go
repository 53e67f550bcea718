package model

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMajors(t *testing.T) {
	e := PgLease
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"17", []int{17}},
		{"16,14", []int{14, 16}},
		{" 15 , 15 ", []int{15}},
		{"all", []int{14, 15, 16, 17, 18, 19}},
	} {
		got, err := e.ParseMajors(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseMajors(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "13", "20", "x", "14,", "all,14"} {
		if _, err := e.ParseMajors(bad); err == nil {
			t.Errorf("ParseMajors(%q) accepted", bad)
		}
	}
}

func TestNames(t *testing.T) {
	if PgLease.ScriptFile() != "pg_lease--0.5.1.sql" || PgLease.ControlFile() != "pg_lease.control" {
		t.Errorf("file names: %s %s", PgLease.ScriptFile(), PgLease.ControlFile())
	}
	if PgLease.MinMajor() != 14 || PgLease.MaxMajor() != 19 {
		t.Errorf("majors: %d..%d", PgLease.MinMajor(), PgLease.MaxMajor())
	}
}

func TestELArch(t *testing.T) {
	for goarch, want := range map[string]string{"amd64": "x86_64", "arm64": "aarch64", "riscv64": ""} {
		if got := ELArch(goarch); got != want {
			t.Errorf("ELArch(%q) = %q, want %q", goarch, got, want)
		}
	}
}

func TestDebVersion(t *testing.T) {
	for suffix, want := range map[string]string{"PGSTY": "0.1.0-1PGSTY~bookworm", "PIGSTY": "0.1.0-1PIGSTY~bookworm", "PGDG": "0.1.0-1.pgdg120+1"} {
		if got := Packages.DebVersion("0.1.0", 1, suffix); got != want {
			t.Errorf("DebVersion(%s) = %q, want %q", suffix, got, want)
		}
	}
	if got := PgLease.DebPackage(17); got != "postgresql-17-pg-lease" {
		t.Errorf("DebPackage(17) = %q", got)
	}
}

func TestParseArch(t *testing.T) {
	for in, want := range map[string]string{"amd64": "amd64", "x86_64": "amd64", "arm64": "arm64", "aarch64": "arm64"} {
		if got, err := ParseArch(in); err != nil || got != want {
			t.Errorf("ParseArch(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "arm", "x86-64", "AARCH64", "riscv64"} {
		if got, err := ParseArch(bad); err == nil || !strings.Contains(err.Error(), "aarch64") {
			t.Errorf("ParseArch(%q) = %q, %v; want an error naming the choices", bad, got, err)
		}
	}
}
