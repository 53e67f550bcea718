-- since pg_lease 0.3.0
-- Eras and the durability floor (CONTRACT, pg_lease 0.3.0). A fresh
-- cluster is on timeline 1, so the bands here are those of timeline 1.
CREATE EXTENSION pg_lease;
\set SHOW_CONTEXT never
-- the era the extension was installed in: band 0, on this server
SELECT band, generation, timeline, new_eras, first_epoch, current FROM lease.current_era();
-- a name never acquired starts at 1, as before
SELECT acquired, epoch FROM lease.acquire('e1', 'a', interval '1 minute');
-- new_era(): the next band (timeline 1 << 15 | 64: it moves to the next
-- multiple of 64 on the timeline)
SELECT band, generation, timeline, new_eras, first_epoch FROM lease.new_era();
SELECT band, new_eras, first_epoch, current FROM lease.current_era();
-- the holder from band 0 renews and releases with its epoch
SELECT status FROM lease.renew('e1', 'a', 1, interval '1 minute');
SELECT lease.release('e1', 'a', 1);
-- the next grant of that name is the new era's first epoch
SELECT acquired, epoch FROM lease.acquire('e1', 'b', interval '1 minute');
-- a new name too; after that, one more per holder within the era
SELECT acquired, epoch FROM lease.acquire('e2', 'a', interval '1 millisecond');
SELECT pg_sleep(0.01);
SELECT acquired, epoch FROM lease.acquire('e2', 'b', interval '1 minute') \gset e2_
SELECT :'e2_acquired' AS acquired, :'e2_epoch' AS epoch;
-- a second new era
SELECT band, new_eras, first_epoch FROM lease.new_era();
SELECT acquired, epoch FROM lease.acquire('e3', 'a', interval '1 minute');
SELECT lease.release('e2', 'b', :e2_epoch);
SELECT acquired, epoch FROM lease.acquire('e2', 'c', interval '1 minute');
-- the eras recorded, oldest first
SELECT band, generation, timeline, new_eras, installed FROM lease.eras ORDER BY band;
-- a name at the last epoch of its era's band (set up as the table's owner
-- could): released, the next holder keeps that epoch; lapsed, a takeover
-- would leave the band, and is refused rather than given an epoch of the
-- next band
UPDATE lease.leases SET epoch = (band + 1) * 4294967296, owner = NULL, expires_at = NULL WHERE name = 'e3';
SELECT acquired, epoch FROM lease.acquire('e3', 'b', interval '1 millisecond');
SELECT pg_sleep(0.01);
\set VERBOSITY terse
SELECT acquired, epoch FROM lease.acquire('e3', 'c', interval '1 minute');
\set VERBOSITY default
SELECT held, owner, epoch FROM lease.inspect('e3');

-- The durability floor: a transaction that changed a lease commits at
-- least at synchronous_commit = on, whatever the session set.
SET synchronous_commit = off;
BEGIN;
SELECT acquired, epoch AS d1 FROM lease.acquire('d1', 'a', interval '1 minute') \gset
SHOW synchronous_commit;
COMMIT;
SHOW synchronous_commit;
-- calls that change nothing keep the session's setting
BEGIN;
SELECT acquired FROM lease.acquire('d1', 'b', interval '1 minute');
SELECT status FROM lease.renew('d1', 'b', 1, interval '1 minute');
SELECT held FROM lease.inspect('d1');
SHOW synchronous_commit;
COMMIT;
-- a renew that succeeds, with the floor at remote_apply
SET lease.synchronous_commit = remote_apply;
BEGIN;
SELECT status FROM lease.renew('d1', 'a', :d1, interval '1 minute');
SHOW synchronous_commit;
COMMIT;
-- session: the session's setting stands (0.2.0's behaviour)
SET lease.synchronous_commit = session;
BEGIN;
SELECT lease.release('d1', 'a', :d1);
SHOW synchronous_commit;
COMMIT;
-- a value it does not know is an error, and the call changes nothing
SET lease.synchronous_commit = sometimes;
SELECT acquired FROM lease.acquire('d2', 'a', interval '1 minute');
SELECT held, epoch FROM lease.inspect('d2');
RESET lease.synchronous_commit;
-- what still defeats it: lowering synchronous_commit again later in the
-- same transaction (the README says not to)
BEGIN;
SELECT acquired FROM lease.acquire('d3', 'a', interval '1 minute');
SET LOCAL synchronous_commit = off;
SHOW synchronous_commit;
COMMIT;
RESET synchronous_commit;
-- new_era() is not for PUBLIC; current_era() is
SELECT has_function_privilege('public', 'lease.new_era()', 'EXECUTE') AS public_new_era,
       has_function_privilege('public', 'lease.current_era()', 'EXECUTE') AS public_current_era,
       has_function_privilege('public', 'lease.era_band()', 'EXECUTE') AS public_era_band,
       has_function_privilege('public', 'lease.durable()', 'EXECUTE') AS public_durable;
DROP EXTENSION pg_lease;
DROP SCHEMA lease;
