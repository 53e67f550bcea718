package cli

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/pgtest"
	"github.com/pglease/pglease-gen/internal/testenv"
)

const referenceFile = "../../docs/reference.md"

// catalogFunction is a function of schema lease as the installed
// extension declares it.
type catalogFunction struct {
	name, args, result, comment string
	public                      bool // PUBLIC may execute it
}

// catalogRegion is what docs/reference.md shows of f under its heading,
// between the markers: the signature, the result, the comment and who
// may call it.
func (f catalogFunction) region() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- catalog -->\n```sql\nlease.%s(%s)\n  RETURNS %s\n```\n\n", f.name, f.args, f.result)
	for _, l := range strings.Split(f.comment, "\n") {
		b.WriteString(strings.TrimRight("> "+l, " ") + "\n")
	}
	if !f.public {
		fmt.Fprintf(&b, "\nNot for PUBLIC: the installer (and superusers) may call it, or a role it grants `EXECUTE ON FUNCTION lease.%s` to.\n", f.name)
	}
	b.WriteString("<!-- /catalog -->")
	return b.String()
}

var (
	referenceHeading = regexp.MustCompile(`(?m)^### lease\.([a-z_]+)$`)
	referenceRegion  = regexp.MustCompile("(?s)<!-- catalog -->.*?<!-- /catalog -->")
)

// TestReferenceMatchesTheCatalog installs the extension and reads every
// function of schema lease from the catalog: docs/reference.md documents
// each one PUBLIC may call (trigger functions aside), and under each
// heading shows the function's arguments with their defaults, its result
// columns and its COMMENT exactly as the catalog has them; a heading
// naming no function, a missing one, or any difference fails
// (-update rewrites the catalog parts, never the prose).
func TestReferenceMatchesTheCatalog(t *testing.T) {
	srv := pgtest.Pinned(t, model.PgLease.MaxMajor()-1)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE EXTENSION pg_lease"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `
SELECT p.proname, pg_get_function_arguments(p.oid),
       pg_get_function_result(p.oid) || coalesce((SELECT ' (' || string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum) || ')'
         FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE t.oid = p.prorettype AND t.typnamespace = p.pronamespace), ''),
       coalesce(obj_description(p.oid, 'pg_proc'), ''),
       p.proacl IS NULL OR EXISTS (SELECT FROM aclexplode(p.proacl) a WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'),
       p.prorettype IN ('trigger'::regtype, 'event_trigger'::regtype)
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'lease' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	catalog := map[string]catalogFunction{}
	var public []string
	for rows.Next() {
		var f catalogFunction
		var trigger bool
		if err := rows.Scan(&f.name, &f.args, &f.result, &f.comment, &f.public, &trigger); err != nil {
			t.Fatal(err)
		}
		if _, twice := catalog[f.name]; twice {
			t.Fatalf("lease.%s has overloads: the reference names functions by name alone", f.name)
		}
		catalog[f.name] = f
		if f.public && !trigger {
			public = append(public, f.name)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	heads := referenceHeading.FindAllStringSubmatchIndex(doc, -1)
	var out strings.Builder
	last := 0
	var documented []string
	for i, h := range heads {
		name := doc[h[2]:h[3]]
		documented = append(documented, name)
		end := len(doc)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		f, ok := catalog[name]
		if !ok {
			t.Errorf("reference.md documents lease.%s, which the extension does not have", name)
			continue
		}
		section := doc[h[1]:end]
		loc := referenceRegion.FindStringIndex(section)
		if loc == nil {
			if *testenv.Update {
				out.WriteString(doc[last:h[1]] + "\n\n" + f.region())
				last = h[1]
			} else {
				t.Errorf("reference.md: lease.%s has no <!-- catalog --> part (go test ./internal/cli -run TestReferenceMatchesTheCatalog -update adds it)", name)
			}
			continue
		}
		got := section[loc[0]:loc[1]]
		if want := f.region(); got != want {
			if *testenv.Update {
				out.WriteString(doc[last:h[1]+loc[0]] + want)
				last = h[1] + loc[1]
				continue
			}
			t.Errorf("reference.md: lease.%s differs from the catalog (-update rewrites it):\n--- reference.md\n%s\n--- catalog\n%s", name, got, want)
		}
	}
	for _, name := range public {
		if !slices.Contains(documented, name) {
			t.Errorf("lease.%s, which PUBLIC may call, is not in reference.md (add a heading ### lease.%s, then -update)", name, name)
		}
	}
	if *testenv.Update && last > 0 {
		out.WriteString(doc[last:])
		if err := os.WriteFile(referenceFile, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
