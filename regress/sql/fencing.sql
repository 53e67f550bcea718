-- since pg_lease 0.2.0
-- pg_lease 0.2.0: guard, purge and list, and how they meet the 0.1.0
-- functions. Timestamps are printed as relative checks.
CREATE EXTENSION pg_lease;
\set SHOW_CONTEXT never
\set VERBOSITY default

-- guard: validation as for renew (22023), nothing changes
SELECT lease.guard(NULL, 'w', 1);
SELECT lease.guard('g', '', 1);
SELECT lease.guard('g', 'w', 0);
SELECT lease.guard('g', 'w', NULL);

-- guard: every status, in renew's order, as 55000 with the status as DETAIL
SELECT lease.guard('g', 'w', 1);                       -- unknown: not_owner
SELECT acquired, epoch FROM lease.acquire('g', 'w', interval '1 minute');
SELECT lease.guard('g', 'other', 1);                   -- not_owner
SELECT lease.guard('g', 'w', 2);                       -- epoch_mismatch
SELECT lease.guard('g', 'w', 1) > clock_timestamp() AS guarded_until_expiry;
SELECT lease.guard('g', 'w', 1) = (SELECT expires_at FROM lease.inspect('g')) AS returns_expiry;

-- in the guarding transaction (the isolation specs show the lock itself)
BEGIN;
SELECT lease.guard('g', 'w', 1) IS NOT NULL AS guarded;
-- the holder's own renew and release in the guarding transaction do not wait
SELECT status FROM lease.renew('g', 'w', 1, interval '1 minute');
SELECT lease.release('g', 'w', 1);
COMMIT;
-- released now (at epoch 2): a guard at the old epoch fails, and so does
-- one at the next, which nobody holds yet
SELECT lease.guard('g', 'w', 1);
SELECT lease.guard('g', 'w', 2);
SELECT held, owner, epoch FROM lease.inspect('g');

-- lapsed: a guard fails with lapsed, and the lease is not revived
SELECT acquired, epoch FROM lease.acquire('lapse', 'w', interval '1 millisecond');
SELECT pg_sleep(0.01);
SELECT lease.guard('lapse', 'w', 1);
SELECT held, owner, epoch FROM lease.inspect('lapse');

-- list: held only by default, everything with include_free, ordered by name
SELECT acquired FROM lease.acquire('b-held', 'w', interval '1 minute');
SELECT acquired FROM lease.acquire('a-held', 'w', interval '1 minute');
SELECT name, held, owner, epoch, expires_at > clock_timestamp() AS in_future FROM lease.list();
SELECT name, held, owner, epoch FROM lease.list(include_free => true);

-- purge: validation (22023; an infinite grace needs PostgreSQL 17's
-- infinite intervals, so it is not written here)
SELECT lease.purge(NULL);
SELECT lease.purge(interval '-1 second');
SELECT lease.purge(interval '1 month');

-- purge with a grace keeps names lapsed for less than it, and released
-- names go at once; held names are never touched
SELECT lease.purge(interval '1 hour');
SELECT name, held, epoch FROM lease.list(true);
-- then without grace: the lapsed name goes too
SELECT lease.purge();
SELECT name, held, epoch FROM lease.list(true);
-- a purged name is unknown: inspect shows nothing, its last owner gets not_owner
SELECT held, owner, epoch FROM lease.inspect('lapse');
SELECT status FROM lease.renew('lapse', 'w', 1, interval '1 minute');
SELECT lease.release('g', 'w', 2);
SELECT lease.guard('g', 'w', 2);

-- no epoch is issued twice: the purged names had epochs up to 2 (g was
-- released at 2), so every unknown name now starts at 3, a name never
-- seen before too
SELECT acquired, epoch FROM lease.acquire('g', 'w', interval '1 minute');
SELECT acquired, epoch FROM lease.acquire('lapse', 'w', interval '1 minute');
SELECT acquired, epoch FROM lease.acquire('brand-new', 'w', interval '1 minute');

SELECT * FROM lease.purge_mark;
-- a second purge keeps the highest mark
SELECT lease.release('brand-new', 'w', 3);
SELECT lease.purge();
SELECT epoch FROM lease.purge_mark;

-- pg_dump carries both tables (registered with pg_extension_config_dump)
SELECT c.relname
  FROM pg_extension AS e, unnest(e.extconfig) AS cfg(oid) JOIN pg_class AS c ON c.oid = cfg.oid
 WHERE e.extname = 'pg_lease' ORDER BY c.relname;

DROP EXTENSION pg_lease;
DROP SCHEMA lease;
