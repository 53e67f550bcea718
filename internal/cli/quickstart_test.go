package cli

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/testenv"
)

// quickstartPrompt starts each statement of the README's quickstart.
const quickstartPrompt = "app=# "

// TestReadmeQuickstartIsReal runs the README's quickstart, statement by
// statement, with psql against a fresh database that has the extension's
// files installed, and compares each output with the one the README
// shows (-update writes them).
func TestReadmeQuickstartIsReal(t *testing.T) {
	testenv.Tools(t, "psql") // (the pinned server builds have none)
	srv := pgtest.Pinned(t, model.PgLease.MaxMajor()-1)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE app"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start, end := strings.Index(doc, "<!-- quickstart -->"), strings.Index(doc, "<!-- /quickstart -->")
	if start < 0 || end < start {
		t.Fatal("README.md has no <!-- quickstart --> ... <!-- /quickstart --> block")
	}
	lines := strings.Split(doc[start:end], "\n")
	var out []string
	statements := 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		out = append(out, l)
		stmt, ok := strings.CutPrefix(l, quickstartPrompt)
		if !ok {
			continue
		}
		statements++
		var want []string
		for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], quickstartPrompt) && !strings.HasPrefix(lines[i+1], "```") {
			i++
			want = append(want, lines[i])
		}
		cmd := exec.Command("psql", "-X", "-h", srv.Dir, "-p", strconv.Itoa(srv.Port), "-U", srv.User, "-d", "app", "-c", stmt)
		cmd.Env = append(os.Environ(), "PGTZ=UTC", "LC_ALL=C")
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("psql -c %q: %v\n%s", stmt, err, got)
		}
		var have []string
		for _, g := range strings.Split(strings.TrimRight(string(got), "\n"), "\n") {
			have = append(have, strings.TrimRight(g, " "))
		}
		if *testenv.Update {
			out = append(append(out, have...), "")
			continue
		}
		if strings.Join(have, "\n") != strings.TrimRight(strings.Join(want, "\n"), "\n") {
			t.Errorf("README quickstart: %s\n--- README shows\n%s\n--- psql says\n%s", stmt, strings.Join(want, "\n"), strings.Join(have, "\n"))
		}
	}
	if statements < 5 {
		t.Fatalf("the quickstart has %d statements: the test runs nothing", statements)
	}
	if *testenv.Update {
		if err := os.WriteFile("../../README.md", []byte(doc[:start]+strings.Join(out, "\n")+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
