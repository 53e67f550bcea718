-- since pg_lease 0.4.0
-- Eras and the durability floor (CONTRACT, pg_lease 0.3.0 and 0.4.0). A
-- fresh cluster is on timeline 1, so the bands here are those of
-- timeline 1 in generation 0: band = generation * 2^21 + (timeline -
-- the generation's first) * 2^13 + new_eras, its epochs from band * 2^32 + 1.
CREATE EXTENSION pg_lease;
-- (0.5.0: no maximum TTL and so no grace after a fault, as before 0.5.0
-- and as an updated database has it; grace.sql tests them)
DO $$ BEGIN IF to_regproc('lease.set_max_ttl') IS NOT NULL THEN PERFORM lease.set_max_ttl(NULL); END IF; END $$;
\set SHOW_CONTEXT never
-- the era the extension was installed in: band 0, entered by the first
-- grant (by the update, from 0.2.0 or 0.3.0)
SELECT band, generation, timeline, new_eras, first_epoch FROM lease.current_era();
-- a name never acquired starts at 1, as before
SELECT acquired, epoch FROM lease.acquire('e1', 'a', interval '1 minute');
SELECT band, current FROM lease.current_era();
-- new_era(): the next multiple of 64 on the timeline
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

-- A crash recovery empties era_now (an unlogged table); emptied by hand
-- here, the next grant enters the next era on the timeline, one above
SELECT count(*) FROM lease.era_now;
DELETE FROM lease.era_now;
SELECT band, current FROM lease.current_era();
SELECT acquired, epoch FROM lease.acquire('e4', 'a', interval '1 minute');
SELECT band, new_eras, current FROM lease.current_era();

-- A name that uses up its band moves the database to the next era by
-- itself (set up as the table's owner could: e3 released at the band's
-- last epoch, 130 * 2^32). A grant keeps or advances an epoch in place
-- only below its band's last, so the next grant is the next era's first
-- epoch, and a takeover after it the one after that
UPDATE lease.leases SET epoch = 130 * 4294967296::bigint, owner = NULL, expires_at = NULL WHERE name = 'e3';
SELECT acquired, epoch FROM lease.acquire('e3', 'b', interval '1 millisecond');
SELECT pg_sleep(0.01);
SELECT acquired, epoch FROM lease.acquire('e3', 'c', interval '1 minute');
SELECT band, new_eras FROM lease.current_era();

-- Rows without their eras (a row that came by logical replication or
-- pg_restore -t, here written by hand): a free name whose epoch lies above
-- the era's band moves the database to the next generation above it
INSERT INTO lease.leases (name, owner, epoch, expires_at) VALUES ('r1', NULL, 5000 * 4294967296::bigint + 7, NULL);
SELECT acquired, epoch FROM lease.acquire('r1', 'a', interval '1 minute');
SELECT band, generation, new_eras FROM lease.current_era();
-- and a crash after it: the next era lies above every epoch in the table
UPDATE lease.leases SET epoch = 3 * 2097152 * 4294967296::bigint + 9 WHERE name = 'r1';
DELETE FROM lease.era_now;
SELECT acquired, epoch FROM lease.acquire('r2', 'a', interval '1 minute');
SELECT band, generation, new_eras FROM lease.current_era();
-- a name at bigint's last epoch is an error that says so, never a wrap
INSERT INTO lease.leases (name, owner, epoch, expires_at) VALUES ('r3', 'x', 9223372036854775807, now() - interval '1 second');
SELECT acquired, epoch FROM lease.acquire('r3', 'a', interval '1 minute');
DELETE FROM lease.leases WHERE name = 'r3';

-- the eras recorded, lowest band first
SELECT band, generation, base_timeline, timeline, new_eras, installed FROM lease.eras ORDER BY band;

-- The durability floor: a transaction that changed a lease commits at
-- least at synchronous_commit = on, whatever the session set.
SET synchronous_commit = off;
BEGIN;
SELECT acquired, epoch AS d1 FROM lease.acquire('d1', 'a', interval '1 minute') \gset
SHOW synchronous_commit;
COMMIT;
SHOW synchronous_commit;
-- each setting below on, and the floor on named by the session itself
-- (set inline), then the floor at remote_apply (durable())
SET synchronous_commit = local;
BEGIN;
SELECT acquired, epoch AS d5 FROM lease.acquire('d5', 'a', interval '1 minute') \gset
SHOW synchronous_commit;
COMMIT;
SET synchronous_commit = remote_write;
BEGIN;
SELECT lease.release('d5', 'a', :d5);
SHOW synchronous_commit;
COMMIT;
SET synchronous_commit = off;
SET lease.synchronous_commit = on;
BEGIN;
SELECT acquired, epoch AS d5 FROM lease.acquire('d5', 'a', interval '1 minute') \gset
SHOW synchronous_commit;
COMMIT;
SET lease.synchronous_commit = remote_apply;
BEGIN;
SELECT lease.release('d5', 'a', :d5);
SHOW synchronous_commit;
COMMIT;
SET synchronous_commit = on;
BEGIN;
SELECT acquired FROM lease.acquire('d5', 'a', interval '1 minute');
SHOW synchronous_commit;
COMMIT;
RESET lease.synchronous_commit;
SET synchronous_commit = off;
-- calls that change nothing keep the session's setting
BEGIN;
SELECT acquired FROM lease.acquire('d1', 'b', interval '1 minute');
SELECT status FROM lease.renew('d1', 'b', :d1, interval '1 minute');
SELECT held FROM lease.inspect('d1');
SHOW synchronous_commit;
COMMIT;
-- a renew that succeeds, with the floor at remote_apply
SET lease.synchronous_commit = remote_apply;
BEGIN;
SELECT status FROM lease.renew('d1', 'a', :d1, interval '1 minute');
SHOW synchronous_commit;
COMMIT;
-- session, set by the session itself: ignored, the floor stays on
SET lease.synchronous_commit = session;
BEGIN;
SELECT status FROM lease.renew('d1', 'a', :d1, interval '1 minute');
SHOW synchronous_commit;
COMMIT;
-- session, set for the database by the installer: honoured (0.2.0's
-- behaviour: the session's setting stands), whatever the session says
RESET lease.synchronous_commit;
SELECT lease.set_floor('session');
BEGIN;
SELECT status FROM lease.renew('d1', 'a', :d1, interval '1 minute');
SHOW synchronous_commit;
COMMIT;
SELECT lease.set_floor(NULL);
-- session, set for the role in this database: honoured for a session that
-- asks for it
SET lease.synchronous_commit = session;
SELECT lease.set_floor('session', current_user::regrole);
BEGIN;
SELECT lease.release('d1', 'a', :d1);
SHOW synchronous_commit;
COMMIT;
-- entering an era is durable even then
DELETE FROM lease.era_now;
BEGIN;
SELECT acquired FROM lease.acquire('d4', 'a', interval '1 minute');
SHOW synchronous_commit;
COMMIT;
SELECT lease.set_floor(NULL, current_user::regrole);
SELECT lease.set_floor('sometimes');
-- a value it does not know is an error, and the call changes nothing
SET lease.synchronous_commit = sometimes;
SELECT acquired FROM lease.acquire('d2', 'a', interval '1 minute');
SELECT held, epoch FROM lease.inspect('d2');
RESET lease.synchronous_commit;
-- what still defeats it: lowering synchronous_commit again later in the
-- same transaction (the docs say not to)
BEGIN;
SELECT acquired FROM lease.acquire('d3', 'a', interval '1 minute');
SET LOCAL synchronous_commit = off;
SHOW synchronous_commit;
COMMIT;
RESET synchronous_commit;
-- no other role can lower the database's floor: set_floor() is the
-- installer's, and database_floor(), which holds it, only its owner's
CREATE ROLE regress_lease_other;
SET ROLE regress_lease_other;
SELECT lease.set_floor('session');
CREATE OR REPLACE FUNCTION lease.database_floor() RETURNS text LANGUAGE sql STABLE AS $$SELECT 'session'::text$$;
RESET ROLE;
DROP ROLE regress_lease_other;
SELECT lease.database_floor();
-- new_era() and set_floor() are the installer's; current_era() is PUBLIC's
SELECT has_function_privilege('public', 'lease.new_era()', 'EXECUTE') AS public_new_era,
       has_function_privilege('public', 'lease.set_floor(text, regrole)', 'EXECUTE') AS public_set_floor,
       has_function_privilege('public', 'lease.current_era()', 'EXECUTE') AS public_current_era,
       has_function_privilege('public', 'lease.enter_era(numeric, boolean)', 'EXECUTE') AS public_enter_era,
       has_function_privilege('public', 'lease.durable()', 'EXECUTE') AS public_durable;
DROP EXTENSION pg_lease;
DROP SCHEMA lease;
