-- What PostgreSQL 19 changed that touches an extension like pg_lease,
-- checked on 19 (TestPostgres19Changes). Not one of the suites: on 18 this
-- file's output differs, which the same test shows.
CREATE EXTENSION pg_lease;
-- standard_conforming_strings can no longer be turned off; the scripts
-- have no backslash in any literal (render refuses one), so they read the
-- same under either setting of the older majors
SET standard_conforming_strings = off;
SHOW standard_conforming_strings;
-- escape_string_warning is gone
SHOW escape_string_warning;
-- the new location column: where the server found the control file
-- ($system: the share directory the packages install into)
SELECT name, default_version = installed_version AS installed_default, location
  FROM pg_available_extensions WHERE name = 'pg_lease';
SELECT count(*) > 1 AS versions, min(location) AS location, max(location) = min(location) AS all_there
  FROM pg_available_extension_versions WHERE name = 'pg_lease';
-- log_lock_waits is on by default: a lease call that waits for a row
-- lock logs it, and returns what it returned before
SHOW log_lock_waits;
SELECT acquired, epoch FROM lease.acquire('pg19', 'a', interval '1 minute');
DROP EXTENSION pg_lease;
DROP SCHEMA lease;
