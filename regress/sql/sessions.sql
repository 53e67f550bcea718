-- since pg_lease 0.5.0
-- Sessions (CONTRACT, pg_lease 0.5.0): names acquired under a session are
-- held while it lives; one keep-alive renews them all; closing it releases
-- them (each epoch advances); a session that lapses takes them with it.
-- Every 0.4.0 call keeps working on a name held on its own.
CREATE EXTENSION pg_lease;
\set SHOW_CONTEXT never

-- (ids are random since 0.5.1: kept in psql variables, not shown)
SELECT session AS s1, expires_at > clock_timestamp() + interval '59 seconds' AS alive
  FROM lease.open_session('w', interval '1 minute') \gset
SELECT :'alive' AS alive, :s1 > 0 AS positive;
SELECT acquired, epoch, expires_at = (SELECT s.expires_at FROM lease.sessions AS s WHERE s.id = :s1) AS sessions_expiry
  FROM lease.session_acquire(:s1, 'w', 'a');
SELECT acquired, epoch FROM lease.session_acquire(:s1, 'w', 'b');
-- (again: idempotent, as acquire is)
SELECT acquired, epoch FROM lease.session_acquire(:s1, 'w', 'b');
SELECT name, held, owner, epoch FROM lease.list();

-- another owner cannot take them, nor use the session
SELECT acquired, epoch FROM lease.acquire('a', 'x', interval '1 minute');
SELECT acquired FROM lease.session_acquire(:s1, 'x', 'c');
SELECT acquired FROM lease.session_acquire(42, 'w', 'c');
-- nor once the names' own expiry (their grant's) has passed while the
-- session lives: the session's is what counts (moved here as keep-alives
-- and time would move them)
UPDATE lease.leases SET expires_at = clock_timestamp() - interval '1 second' WHERE name IN ('a', 'b');
SELECT acquired, epoch FROM lease.acquire('a', 'x', interval '1 minute');
SELECT acquired FROM lease.acquire('b', 'x', interval '1 minute', interval '50 milliseconds');
SELECT name, held, owner, epoch FROM lease.list();

-- one keep-alive extends every name under the session
CREATE TEMP TABLE before AS SELECT expires_at FROM lease.inspect('a');
SELECT status, expires_at > (SELECT expires_at FROM before) AS extended FROM lease.keep_alive(:s1, 'w');
SELECT held, expires_at > (SELECT expires_at FROM before) AS extended,
       expires_at = (SELECT s.expires_at FROM lease.sessions AS s WHERE s.id = :s1) AS sessions_expiry
  FROM lease.inspect('b');
SELECT status, expires_at FROM lease.keep_alive(:s1, 'x');
SELECT status, expires_at FROM lease.keep_alive(42, 'w');

-- a name under a session is renewed by the session only; guard and
-- release take it as they take any name
SELECT status FROM lease.renew('a', 'w', 1, interval '1 minute');
BEGIN;
SELECT lease.guard('a', 'w', 1) = (SELECT s.expires_at FROM lease.sessions AS s WHERE s.id = :s1) AS guarded_until_the_sessions_expiry;
COMMIT;
SELECT lease.release('b', 'w', 1);
SELECT held, owner, epoch FROM lease.inspect('b');

-- close: every name still under it released, its epoch advanced
SELECT acquired, epoch FROM lease.session_acquire(:s1, 'w', 'c');
SELECT status, released FROM lease.close_session(:s1, 'x');
SELECT status, released FROM lease.close_session(:s1, 'w');
SELECT name, held, owner, epoch FROM lease.list(true);
SELECT status, released FROM lease.close_session(:s1, 'w');
SELECT status FROM lease.keep_alive(:s1, 'w');
SELECT acquired FROM lease.session_acquire(:s1, 'w', 'd');
SELECT acquired, epoch FROM lease.acquire('a', 'x', interval '1 minute');

-- a session that lapses takes its names with it (its expiry, and the
-- names' own from their grant, moved into the past here, as time would);
-- a lapsed session is not revived
SELECT session AS s2 FROM lease.open_session('w2', interval '1 minute') \gset
SELECT acquired, epoch FROM lease.session_acquire(:s2, 'w2', 'e');
UPDATE lease.sessions SET expires_at = clock_timestamp() - interval '1 second' WHERE id = :s2;
UPDATE lease.leases SET expires_at = clock_timestamp() - interval '2 seconds' WHERE name = 'e';
SELECT held, owner, epoch FROM lease.inspect('e');
SELECT status, expires_at FROM lease.keep_alive(:s2, 'w2');
SELECT acquired, epoch FROM lease.acquire('e', 'y', interval '1 minute');
SELECT held, owner, epoch FROM lease.inspect('e');
SELECT session_id FROM lease.leases WHERE name = 'e';
SELECT status, released FROM lease.close_session(:s2, 'w2');

-- purge takes lapsed sessions and the names they left
SELECT session AS s3 FROM lease.open_session('w3', interval '1 minute') \gset
SELECT acquired, epoch FROM lease.session_acquire(:s3, 'w3', 'f');
UPDATE lease.sessions SET expires_at = clock_timestamp() - interval '1 second' WHERE id = :s3;
UPDATE lease.leases SET expires_at = clock_timestamp() - interval '2 seconds' WHERE name = 'f';
SELECT lease.purge();
SELECT count(*) AS sessions FROM lease.sessions;
SELECT name FROM lease.list(true) ORDER BY 1;
-- a purged name starts above every epoch it had
SELECT acquired, epoch FROM lease.acquire('f', 'z', interval '1 minute');

-- keep_alive and open_session report the era (its first epoch); a new
-- era changes it: the holder then checks its names
SELECT session AS s4, era = (SELECT c.first_epoch FROM lease.era_now AS c) AS era_reported
  FROM lease.open_session('w4', interval '1 minute') \gset
SELECT :'era_reported' AS era_reported;
SELECT era = (SELECT c.first_epoch FROM lease.era_now AS c) AS era_reported FROM lease.keep_alive(:s4, 'w4');
CREATE TEMP TABLE era_before AS SELECT era FROM lease.keep_alive(:s4, 'w4');
SELECT lease.new_era() IS NOT NULL AS new_era;
SELECT status, era <> (SELECT era FROM era_before) AS era_changed FROM lease.keep_alive(:s4, 'w4');
SELECT status FROM lease.close_session(:s4, 'w4');

-- bad input: a clear error, nothing changed
\set VERBOSITY default
SELECT lease.open_session('', interval '1 minute');
SELECT lease.open_session('w', interval '0');
SELECT lease.session_acquire(NULL, 'w', 'g');
\set VERBOSITY terse
SELECT count(*) AS sessions FROM lease.sessions;

DROP EXTENSION pg_lease;
DROP SCHEMA lease;
