-- A role with CREATE on the database installs the trusted extension. The
-- bootstrap superuser owns the table and the functions; the installer owns
-- the extension and the schema; neither the installer nor PUBLIC can read
-- or write lease.leases, and everyone goes through the API.
CREATE ROLE regress_lease_installer;
CREATE ROLE regress_lease_app;
DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO regress_lease_installer', current_database()); END $$;

SET ROLE regress_lease_installer;
CREATE EXTENSION pg_lease;
RESET ROLE;

SELECT e.extname, e.extversion, e.extowner::regrole AS extension_owner, e.extrelocatable,
       n.nspname AS schema, n.nspowner::regrole AS schema_owner
  FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
 WHERE e.extname = 'pg_lease';

-- the table: owned by the bootstrap superuser, in the config dump, read by
-- the installer (its own pg_dump; its INSERT, for its own restore, lasts
-- until the database first grants: below)
SELECT c.relowner = 10 AS bootstrap_superuser_owns,
       (SELECT count(*) FROM aclexplode(c.relacl) AS a WHERE a.grantee <> c.relowner AND a.privilege_type <> 'INSERT') AS grants_to_others
  FROM pg_class AS c WHERE c.oid = 'lease.leases'::regclass;
-- its storage options: room on each page for HOT updates
SELECT c.reloptions FROM pg_class AS c WHERE c.oid = 'lease.leases'::regclass;
SELECT extconfig::regclass[] AS dumped_tables, extcondition FROM pg_extension WHERE extname = 'pg_lease';

-- the functions: SECURITY DEFINER, pinned search_path, volatile, commented
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args,
       p.prosecdef, p.provolatile, p.proconfig, p.proowner = 10 AS bootstrap_superuser_owns,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc AS p WHERE p.pronamespace = 'lease'::regnamespace ORDER BY p.proname;

-- everything the extension owns (but types: PostgreSQL 17 and later also
-- record the table's row types as members, older majors do not; and
-- 0.5.0's unlogged sequences, which PostgreSQL 14 does not have)
SELECT pg_describe_object(classid, objid, objsubid) AS member
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   AND classid <> 'pg_type'::regclass
   AND pg_describe_object(classid, objid, objsubid) NOT IN ('sequence lease.grace_band', 'sequence lease.grace_end')
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_lease')
 ORDER BY 1;

\set SHOW_CONTEXT never
-- once the database has granted, the installer cannot change the table
-- directly (from 0.5.1 it reads it, for its own pg_dump, and writes it
-- only in a restore into a database that has not granted yet)
SELECT acquired, epoch FROM lease.acquire('first', 'superuser', interval '1 minute');
SET ROLE regress_lease_installer;
SELECT count(*) FROM lease.leases;
INSERT INTO lease.leases VALUES ('x', 'y', 1, now());
UPDATE lease.leases SET epoch = 1;
DELETE FROM lease.leases;
TRUNCATE lease.leases;
-- but uses the API
SELECT acquired, epoch FROM lease.acquire('shared', 'installer', interval '1 minute');
-- nor can it swap in a table of its own for the functions, which run as
-- superuser, to touch: the schema keeps its name, the table its place
ALTER SCHEMA lease RENAME TO lease_moved;
ALTER TABLE lease.leases RENAME TO leases_moved;
DROP TABLE lease.leases;
ALTER EXTENSION pg_lease DROP TABLE lease.leases;
ALTER EXTENSION pg_lease DROP EVENT TRIGGER pg_lease_guard_schema;
ALTER EVENT TRIGGER pg_lease_guard_schema DISABLE;
DROP EVENT TRIGGER pg_lease_guard_schema;
SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lease%' ORDER BY 1;
RESET ROLE;

-- nor can any other role, while EXECUTE stays granted to PUBLIC
SET ROLE regress_lease_app;
SELECT count(*) FROM lease.leases;
SELECT acquired, epoch FROM lease.acquire('shared', 'app', interval '1 minute');
SELECT held, owner, epoch FROM lease.inspect('shared');
SELECT lease.release('shared', 'installer', 1);
RESET ROLE;
SELECT has_table_privilege('public', 'lease.leases', 'SELECT') AS public_select,
       has_schema_privilege('public', 'lease', 'USAGE') AS public_usage;

-- a DBA narrows the API to application roles (the README's recipe)
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA lease FROM PUBLIC;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA lease TO regress_lease_app;
SET ROLE regress_lease_installer;
SELECT held FROM lease.inspect('shared');
SET ROLE regress_lease_app;
SELECT held, owner, epoch FROM lease.inspect('shared');
RESET ROLE;

-- the installer drops it; the schema named in the control file stays, empty
SET ROLE regress_lease_installer;
DROP EXTENSION pg_lease;
RESET ROLE;
SELECT n.nspname, n.nspowner::regrole,
       (SELECT count(*) FROM pg_class WHERE relnamespace = n.oid) AS relations,
       (SELECT count(*) FROM pg_proc WHERE pronamespace = n.oid) AS functions
  FROM pg_namespace AS n WHERE n.nspname = 'lease';

DROP SCHEMA lease;
DO $$ BEGIN EXECUTE format('REVOKE CREATE ON DATABASE %I FROM regress_lease_installer', current_database()); END $$;
DROP ROLE regress_lease_installer;
DROP ROLE regress_lease_app;
