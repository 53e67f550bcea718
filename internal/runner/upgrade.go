package runner

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pglease/pglease-gen/internal/model"
	"github.com/pglease/pglease-gen/internal/suite"
)

// An Update is one upgrade path to check: Name (the extension, or a
// broken copy of it under another name) installed at From, filled with
// leases, and updated to To.
type Update struct {
	Name, From, To string
}

// Updates are the checks ext's versions call for: every older version
// updated to the newest. A new version adds its own line to the model and
// is held to the same check.
func Updates(ext model.Extension) []Update {
	var out []Update
	for _, v := range ext.Versions[:len(ext.Versions)-1] {
		out = append(out, Update{Name: ext.Name, From: v.Number, To: ext.Version()})
	}
	return out
}

// CaseName is the check's name in the results, the name of the update
// script it proves: "pg_lease--0.1.0--0.2.0".
func (u Update) CaseName() string { return u.Name + "--" + u.From + "--" + u.To }

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// fill makes leases in every state in a database at the old version: held
// (epoch 1), held after several holders (epoch 3), released (epoch 2) and
// lapsed (epoch 1); from 0.5.0 on, in the mode of a database updated from
// 0.4.0 (no maximum TTL), with a name held under a session too. The check
// renews and releases the held ones after the update with the epochs they
// had.
const fill = `
DO $$ BEGIN IF to_regprocedure('lease.open_session(text,interval)') IS NOT NULL THEN
    PERFORM lease.set_max_ttl(NULL);
    PERFORM lease.session_acquire((SELECT s.session FROM lease.open_session('s1', interval '1 hour') AS s), 's1', 'in_session');
END IF; END $$;
SELECT acquired FROM lease.acquire('held', 'w1', interval '1 hour');
SELECT acquired FROM lease.acquire('many', 'a', interval '1 hour');
SELECT lease.release('many', 'a', 1);
SELECT acquired FROM lease.acquire('many', 'b', interval '1 hour');
SELECT lease.release('many', 'b', 2);
SELECT acquired FROM lease.acquire('many', 'c', interval '1 hour');
SELECT acquired FROM lease.acquire('released', 'w2', interval '1 hour');
SELECT lease.release('released', 'w2', 1);
SELECT acquired FROM lease.acquire('lapsed', 'w3', interval '1 millisecond');
SELECT pg_sleep(0.01);
`

// rows prints every lease row in name order, with the columns every
// version has (a version may add columns of its own, such as 0.3.0's band).
const rows = `SELECT (l.name, l.owner, l.epoch, l.expires_at)::text FROM lease.leases AS l ORDER BY name COLLATE "C"`

// after uses the leases held before the update with their old epochs.
var after = []struct{ sql, want string }{
	{`SELECT status FROM lease.renew('held', 'w1', 1, interval '2 hours')`, "ok"},
	{`SELECT lease.release('held', 'w1', 1)`, "ok"},
	{`SELECT status FROM lease.renew('many', 'c', 3, interval '2 hours')`, "ok"},
	{`SELECT lease.release('many', 'c', 3)`, "ok"},
	{`SELECT status FROM lease.renew('lapsed', 'w3', 1, interval '1 hour')`, "lapsed"},
	{`SELECT epoch FROM lease.acquire('released', 'w4', interval '1 hour')`, "2"},
	{`SELECT epoch FROM lease.acquire('lapsed', 'w5', interval '1 hour')`, "2"},
}

// catalog describes every object of an extension, one row per object: a
// key ("function lease.acquire(text,text,interval,interval)") and what a
// fresh install and an updated one must agree on. %[1]s is the
// extension's name as a literal.
const catalog = `
WITH ext AS (
  SELECT oid, extnamespace FROM pg_extension WHERE extname = %[1]s
), members AS (
  SELECT d.classid, d.objid FROM pg_depend d, ext
   WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
), tables AS (
  SELECT c.oid FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
  UNION
  SELECT t.typrelid FROM pg_type t JOIN members m ON m.classid = 'pg_type'::regclass AND m.objid = t.oid WHERE t.typrelid <> 0
)
SELECT 'extension ' || e.extname, concat_ws(E'\n',
         'owner ' || e.extowner::regrole, 'schema ' || e.extnamespace::regnamespace,
         'relocatable ' || e.extrelocatable,
         'config dump ' || coalesce(e.extconfig::regclass[]::text, 'none') || ' where ' || coalesce(e.extcondition::text, 'none'),
         'comment ' || coalesce(obj_description(e.oid, 'pg_extension'), 'none'))
  FROM pg_extension e JOIN ext ON ext.oid = e.oid
UNION ALL
SELECT 'schema ' || n.nspname, concat_ws(E'\n',
         'owner ' || n.nspowner::regrole, 'acl ' || coalesce(n.nspacl::text, 'default'),
         'comment ' || coalesce(obj_description(n.oid, 'pg_namespace'), 'none'))
  FROM pg_namespace n JOIN ext ON ext.extnamespace = n.oid
UNION ALL
SELECT 'member ' || pg_describe_object(m.classid, m.objid, 0), 'member' FROM members m
UNION ALL
SELECT 'function ' || p.oid::regprocedure, concat_ws(E'\n',
         -- (the bodies of limit_ttl() and database_floor() are settings,
         -- the maximum TTL and the floor, which an updated database keeps:
         -- its own, not a fresh install's)
         CASE WHEN p.proname IN ('limit_ttl', 'database_floor') THEN regexp_replace(pg_get_functiondef(p.oid), 'AS \$function\$.*\$function\$', 'AS (a setting)')
              ELSE pg_get_functiondef(p.oid) END,
         'kind ' || p.prokind::text, 'security definer ' || p.prosecdef, 'volatility ' || p.provolatile::text,
         'strict ' || p.proisstrict, 'parallel ' || p.proparallel::text, 'leakproof ' || p.proleakproof,
         'cost ' || p.procost, 'rows ' || p.prorows,
         'config ' || coalesce(p.proconfig::text, 'none'),
         'owner ' || p.proowner::regrole, 'acl ' || coalesce(p.proacl::text, 'default'),
         'comment ' || coalesce(obj_description(p.oid, 'pg_proc'), 'none'))
  FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
UNION ALL
SELECT 'relation ' || c.oid::regclass, concat_ws(E'\n',
         'kind ' || c.relkind::text, 'persistence ' || c.relpersistence::text,
         'options ' || coalesce(c.reloptions::text, 'none'),
         'row security ' || c.relrowsecurity || ' forced ' || c.relforcerowsecurity,
         'owner ' || c.relowner::regrole, 'acl ' || coalesce(c.relacl::text, 'default'),
         'comment ' || coalesce(obj_description(c.oid, 'pg_class'), 'none'))
  FROM pg_class c JOIN tables USING (oid)
UNION ALL
SELECT 'column ' || a.attrelid::regclass || '.' || a.attname, concat_ws(E'\n',
         'position ' || rank() OVER (PARTITION BY a.attrelid ORDER BY a.attnum),
         'type ' || format_type(a.atttypid, a.atttypmod), 'not null ' || a.attnotnull,
         'default ' || coalesce(pg_get_expr(d.adbin, d.adrelid), 'none'),
         'identity ' || a.attidentity::text, 'generated ' || a.attgenerated::text,
         'collation ' || coalesce(nullif(a.attcollation, 0)::regcollation::text, 'none'),
         'storage ' || a.attstorage::text, 'options ' || coalesce((SELECT array_agg(o ORDER BY o) FROM unnest(a.attoptions) AS o
                                  WHERE o NOT LIKE 'pg\_attver=%%')::text, 'none'),
         'acl ' || coalesce(a.attacl::text, 'default'),
         'comment ' || coalesce(col_description(a.attrelid, a.attnum), 'none'))
  FROM pg_attribute a JOIN tables t ON t.oid = a.attrelid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'constraint ' || co.conrelid::regclass || ' ' || co.conname, concat_ws(E'\n',
         pg_get_constraintdef(co.oid),
         'comment ' || coalesce(obj_description(co.oid, 'pg_constraint'), 'none'))
  FROM pg_constraint co JOIN tables t ON t.oid = co.conrelid
UNION ALL
SELECT 'index ' || i.indexrelid::regclass, concat_ws(E'\n',
         pg_get_indexdef(i.indexrelid),
         'options ' || coalesce(c.reloptions::text, 'none'),
         'comment ' || coalesce(obj_description(i.indexrelid, 'pg_class'), 'none'))
  FROM pg_index i JOIN tables t ON t.oid = i.indrelid JOIN pg_class c ON c.oid = i.indexrelid
UNION ALL
SELECT 'trigger ' || tg.tgrelid::regclass || ' ' || tg.tgname, pg_get_triggerdef(tg.oid)
  FROM pg_trigger tg JOIN tables t ON t.oid = tg.tgrelid WHERE NOT tg.tgisinternal
UNION ALL
SELECT 'policy ' || po.polrelid::regclass || ' ' || po.polname, concat_ws(E'\n',
         'command ' || po.polcmd::text, 'permissive ' || po.polpermissive, 'roles ' || po.polroles::regrole[]::text,
         'using ' || coalesce(pg_get_expr(po.polqual, po.polrelid), 'none'),
         'check ' || coalesce(pg_get_expr(po.polwithcheck, po.polrelid), 'none'))
  FROM pg_policy po JOIN tables t ON t.oid = po.polrelid
UNION ALL
SELECT 'event trigger ' || ev.evtname, concat_ws(E'\n',
         'event ' || ev.evtevent, 'function ' || ev.evtfoid::regprocedure, 'enabled ' || ev.evtenabled::text,
         'tags ' || coalesce(ev.evttags::text, 'none'), 'owner ' || ev.evtowner::regrole,
         'comment ' || coalesce(obj_description(ev.oid, 'pg_event_trigger'), 'none'))
  FROM pg_event_trigger ev JOIN members m ON m.classid = 'pg_event_trigger'::regclass AND m.objid = ev.oid
UNION ALL
SELECT 'type ' || ty.oid::regtype, concat_ws(E'\n',
         'kind ' || ty.typtype::text, 'owner ' || ty.typowner::regrole, 'acl ' || coalesce(ty.typacl::text, 'default'),
         'comment ' || coalesce(obj_description(ty.oid, 'pg_type'), 'none'))
  FROM pg_type ty JOIN members m ON m.classid = 'pg_type'::regclass AND m.objid = ty.oid
ORDER BY 1`

// Record and field separators of the catalog's rows: function bodies
// hold newlines and tabs.
const recordSep, fieldSep = "\x1e", "\x1f"

// checkUpdate runs u in two new databases of the server: one installed
// at u.From, filled, and updated; one installed fresh at u.To. It returns
// what differs, "" when nothing does; err is for a check that could not
// run.
func checkUpdate(ctx context.Context, psql func(ctx context.Context, db string, sql ...string) (string, error), u Update, n int) (string, error) {
	if !identifier.MatchString(u.Name) {
		return "", fmt.Errorf("extension name %q: not a plain identifier", u.Name)
	}
	updated, fresh := fmt.Sprintf("update_%d_updated", n), fmt.Sprintf("update_%d_fresh", n)
	for _, db := range []string{updated, fresh} {
		if _, err := psql(ctx, "postgres", "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db); err != nil {
			return "", err
		}
	}
	var problems []string
	if _, err := psql(ctx, updated, fmt.Sprintf("CREATE EXTENSION %s VERSION '%s'", u.Name, u.From), fill); err != nil {
		return "", err
	}
	before, err := psql(ctx, updated, rows)
	if err != nil {
		return "", err
	}
	if _, err := psql(ctx, updated, "ALTER EXTENSION "+u.Name+" UPDATE TO '"+u.To+"'"); err != nil {
		return fmt.Sprintf("ALTER EXTENSION %s UPDATE TO '%s' failed: %v", u.Name, u.To, err), nil
	}
	if got, err := psql(ctx, updated, rows); err != nil {
		return "", err
	} else if got != before {
		problems = append(problems, fmt.Sprintf("the lease rows changed in the update:\nbefore\n%s\nafter\n%s", before, got))
	}
	if _, err := psql(ctx, fresh, fmt.Sprintf("CREATE EXTENSION %s VERSION '%s'", u.Name, u.To)); err != nil {
		return "", err
	}
	lit := "'" + u.Name + "'"
	want, err := psql(ctx, fresh, fmt.Sprintf(catalog, lit))
	if err != nil {
		return "", err
	}
	got, err := psql(ctx, updated, fmt.Sprintf(catalog, lit))
	if err != nil {
		return "", err
	}
	problems = append(problems, compareCatalogs(parseCatalog(want), parseCatalog(got))...)
	for _, a := range after {
		out, err := psql(ctx, updated, a.sql)
		if err != nil {
			problems = append(problems, fmt.Sprintf("after the update, %s: %v", a.sql, err))
		} else if strings.TrimSpace(out) != a.want {
			problems = append(problems, fmt.Sprintf("after the update, %s returned %q, want %q", a.sql, strings.TrimSpace(out), a.want))
		}
	}
	for _, db := range []string{updated, fresh} {
		if _, err := psql(ctx, "postgres", "DROP DATABASE "+db); err != nil {
			return "", err
		}
	}
	return strings.Join(problems, "\n\n"), nil
}

func parseCatalog(s string) map[string]string {
	out := map[string]string{}
	for _, rec := range strings.Split(s, recordSep) {
		rec = strings.TrimSuffix(rec, "\n")
		if rec == "" {
			continue
		}
		k, v, _ := strings.Cut(rec, fieldSep)
		out[k] = v
	}
	return out
}

// compareCatalogs lists, object by object, what the updated database
// (got) has that a fresh install (want) has not, lacks, or has otherwise.
func compareCatalogs(want, got map[string]string) []string {
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inGot:
			out = append(out, "the update lacks "+k+":\n"+indent(w))
		case !inWant:
			out = append(out, "the update has, and a fresh install has not, "+k+":\n"+indent(g))
		case w != g:
			out = append(out, k+" differs:\n"+lineDiff(w, g))
		}
	}
	return out
}

// lineDiff shows the lines of a fresh install's description (-) and the
// updated one's (+) that the other lacks, in order.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range wl {
		if !slices.Contains(gl, l) {
			b.WriteString("  - fresh:   " + l + "\n")
		}
	}
	for _, l := range gl {
		if !slices.Contains(wl, l) {
			b.WriteString("  + updated: " + l + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// runUpdates runs every check of o on the started server and reports each
// as a case of kind suite.Update.
func runUpdates(ctx context.Context, t Target, o Options, stage func(string)) (suite.Result, error) {
	l, srv, work := t.Layout(), t.Server(), t.WorkDir()
	psql := func(ctx context.Context, db string, sql ...string) (string, error) {
		argv := []string{l.Bin("psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-R", recordSep, "-F", fieldSep,
			"-h", work, "-p", strconv.Itoa(Port), "-U", t.User(), "-d", db}
		for _, s := range sql {
			argv = append(argv, "-c", s)
		}
		out, err := Output(ctx, srv, argv...)
		return string(out), err
	}
	res := suite.NewResult()
	for i, u := range o.Updates {
		stage("update check " + u.CaseName())
		start := time.Now()
		diff, err := checkUpdate(ctx, psql, u, i)
		if err != nil {
			return res, fmt.Errorf("update check %s: %w", u.CaseName(), err)
		}
		c := suite.Case{Kind: suite.Update, Name: u.CaseName(), Passed: diff == "", Duration: time.Since(start)}
		res.Cases = append(res.Cases, c)
		res.Output[suite.Update] += fmt.Sprintf("%s ... %s %d ms\n", c.Name, map[bool]string{true: "ok", false: "FAILED"}[c.Passed], c.Duration.Milliseconds())
		if diff != "" {
			if res.CaseDiffs[suite.Update] == nil {
				res.CaseDiffs[suite.Update] = map[string]string{}
			}
			res.CaseDiffs[suite.Update][c.Name] = diff
			res.Diffs[suite.Update] += fmt.Sprintf("%s: the updated database differs from a fresh install of %s\n%s\n", c.Name, u.To, diff)
		}
	}
	return res, nil
}
