-- since pg_lease 0.5.0
-- The maximum TTL and the grace (CONTRACT, pg_lease 0.5.0): after an era
-- entry that can have lost grants or renewals, no name goes to a new
-- holder until the longest TTL that could have been granted has passed,
-- plus 1% for clock rate; holders the table shows renew meanwhile. A
-- crash is emptying era_now (an unlogged table) by hand; the passing of
-- time is moving the grace's end by hand.
CREATE EXTENSION pg_lease;
\set SHOW_CONTEXT never

-- a fresh install grants at most 1 minute; an updated one has no maximum
-- until its installer sets one: here, set to the default either way
SELECT lease.set_max_ttl(interval '1 minute');
SELECT lease.max_ttl(), lease.grace();
SELECT acquired, epoch FROM lease.acquire('g1', 'a', interval '1 minute');
\set VERBOSITY default
SELECT acquired FROM lease.acquire('g2', 'a', interval '61 seconds');
SELECT status FROM lease.renew('g1', 'a', 1, interval '2 minutes');
SELECT session FROM lease.open_session('s', interval '1 hour');
SELECT lease.set_max_ttl(interval '0');
SELECT lease.set_max_ttl(interval '1 month');
\set VERBOSITY terse

-- a renewal commits at the session's synchronous_commit; a grant at the floor
BEGIN;
SET LOCAL synchronous_commit = off;
SELECT status FROM lease.renew('g1', 'a', 1, interval '1 minute');
SHOW synchronous_commit;
SELECT acquired, epoch FROM lease.acquire('g2', 'a', interval '1 minute');
SHOW synchronous_commit;
COMMIT;

-- a crash: the first grant tried after it enters the next era and its
-- grace, and is refused with the grace's end
DELETE FROM lease.era_now;
SELECT acquired, epoch, expires_at BETWEEN clock_timestamp() + interval '60 seconds'
                                       AND clock_timestamp() + interval '60.6 seconds' AS grace_ends
  FROM lease.acquire('g3', 'b', interval '1 minute');
SELECT lease.grace() = (SELECT c.grace_until FROM lease.era_now AS c) AS grace_reported;
-- holders go on: a renewal, a release
SELECT status FROM lease.renew('g1', 'a', 1, interval '1 minute');
SELECT lease.release('g2', 'a', 1);
-- a re-acquire by the holder the table shows is a new grant: the crash
-- may have lost its release of the name, and a grant to another after it
SELECT acquired, epoch, expires_at = lease.grace() AS grace_reported FROM lease.acquire('g1', 'a', interval '1 minute');
SELECT status FROM lease.renew('g1', 'a', 1, interval '1 minute');
-- nobody new: not the released name, not a new one, not under a session
SELECT acquired, epoch FROM lease.acquire('g2', 'b', interval '1 minute');
SELECT session AS s FROM lease.open_session('s', interval '1 minute') \gset
SELECT acquired, epoch, expires_at = lease.grace() AS grace_reported FROM lease.session_acquire(:s, 's', 'g4');
-- a blocking acquire waits for the grace within max_wait
SELECT acquired FROM lease.acquire('g4', 'b', interval '1 minute', interval '10 milliseconds');
-- the grace over: grants again, in the new era
UPDATE lease.era_now SET grace_until = clock_timestamp();
SELECT lease.grace();
SELECT acquired, epoch FROM lease.acquire('g3', 'b', interval '1 minute');
SELECT acquired, epoch FROM lease.acquire('g2', 'b', interval '1 minute');
-- the holder's re-acquire: the era's next epoch; in the era, idempotent
SELECT acquired, epoch FROM lease.acquire('g1', 'a', interval '1 minute');
SELECT acquired, epoch FROM lease.acquire('g1', 'a', interval '1 minute');
SELECT status FROM lease.renew('g1', 'a', 1, interval '1 minute');

-- the same under a session, whose names a keep-alive keeps: after a
-- crash the session's re-acquire of its name waits for the grace, and
-- then takes the era's next epoch, under the session still
SELECT session AS t FROM lease.open_session('t', interval '1 minute') \gset
SELECT acquired, epoch FROM lease.session_acquire(:t, 't', 'g7');
SELECT acquired, epoch FROM lease.session_acquire(:t, 't', 'g7');
DELETE FROM lease.era_now;
SELECT acquired, epoch, expires_at BETWEEN clock_timestamp() + interval '60 seconds'
                                       AND clock_timestamp() + interval '60.6 seconds' AS grace_ends
  FROM lease.session_acquire(:t, 't', 'g7');
SELECT status FROM lease.keep_alive(:t, 't');
SELECT acquired FROM lease.acquire('g7', 'u', interval '1 minute', interval '10 milliseconds');
UPDATE lease.era_now SET grace_until = clock_timestamp();
SELECT acquired, epoch FROM lease.session_acquire(:t, 't', 'g7');
SELECT epoch, session_id = :t AS under_the_session FROM lease.leases WHERE name = 'g7';
SELECT status, released FROM lease.close_session(:t, 't');

-- a lowered maximum: at once for new leases, for the grace only once the
-- leases the old one allowed have run out
SELECT lease.set_max_ttl(interval '10 seconds');
SELECT max_ttl, previous, previous_until > clock_timestamp() + interval '59 seconds' AS until_they_run_out FROM lease.limits;
SELECT acquired FROM lease.acquire('g5', 'b', interval '11 seconds');
DELETE FROM lease.era_now;
SELECT acquired, expires_at > clock_timestamp() + interval '60 seconds' AS grace_of_the_old_maximum
  FROM lease.acquire('g5', 'b', interval '10 seconds');
UPDATE lease.era_now SET grace_until = clock_timestamp();
UPDATE lease.limits SET previous_until = clock_timestamp();
DELETE FROM lease.era_now;
SELECT acquired, expires_at BETWEEN clock_timestamp() + interval '10 seconds'
                                AND clock_timestamp() + interval '10.1 seconds' AS grace_of_the_new_maximum
  FROM lease.acquire('g5', 'b', interval '10 seconds');

-- a raised maximum, in a database that has granted: after its delay
-- (default 1 minute), so that a standby that replays it within the delay
-- and is promoted counts its grace with it before any lease was granted
-- under it; until then grants keep the old one. (Its notice says when.)
UPDATE lease.era_now SET grace_until = clock_timestamp();
UPDATE lease.limits SET previous_until = clock_timestamp();
SET client_min_messages = warning;
SELECT lease.set_max_ttl(interval '20 seconds');
RESET client_min_messages;
SELECT lease.max_ttl(), max_ttl, raise_to, raise_at BETWEEN clock_timestamp() + interval '59 seconds'
                                                        AND clock_timestamp() + interval '60 seconds' AS in_a_minute
  FROM lease.limits;
SELECT acquired FROM lease.acquire('g8', 'b', interval '20 seconds');
-- its time come (moved 1 s ahead here, as time would): the first call
-- that needs it folds it into the plans, and takes the name
UPDATE lease.limits SET raise_at = clock_timestamp() + interval '500 milliseconds';
SELECT pg_sleep(0.6);
SELECT acquired, expires_at > clock_timestamp() + interval '19 seconds' AS for_20_seconds
  FROM lease.acquire('g8', 'b', interval '20 seconds');
SELECT lease.max_ttl(), lease.grace_length();
-- the same for renew and open_session
SET client_min_messages = warning;
SELECT lease.set_max_ttl(interval '30 seconds');
RESET client_min_messages;
SELECT status FROM lease.renew('g8', 'b', (SELECT epoch FROM lease.inspect('g8')), interval '30 seconds');
SELECT session IS NOT NULL AS opened FROM lease.open_session('r', interval '30 seconds');
UPDATE lease.limits SET raise_at = clock_timestamp() + interval '500 milliseconds';
SELECT pg_sleep(0.6);
SELECT status FROM lease.renew('g8', 'b', (SELECT epoch FROM lease.inspect('g8')), interval '30 seconds');
SELECT session IS NOT NULL AS opened FROM lease.open_session('r', interval '30 seconds');
-- with no delay: at once; a bad delay: an error, nothing changed
SELECT lease.set_max_ttl(interval '40 seconds', interval '0');
SELECT lease.max_ttl(), raise_to, raise_at FROM lease.limits;
SELECT lease.set_max_ttl(interval '50 seconds', NULL);
SELECT lease.set_max_ttl(interval '50 seconds', interval '-1 second');
SELECT lease.max_ttl();

-- no maximum: fencing only, as 0.4.0: no grace, renewals at the floor
UPDATE lease.era_now SET grace_until = clock_timestamp();
SELECT lease.set_max_ttl(NULL);
UPDATE lease.limits SET previous_until = clock_timestamp();
DELETE FROM lease.era_now;
SELECT acquired, epoch FROM lease.acquire('g6', 'b', interval '1 day');
SELECT lease.grace();
BEGIN;
SET LOCAL synchronous_commit = off;
SELECT status FROM lease.renew('g6', 'b', 21474836481, interval '2 days');
SHOW synchronous_commit;
COMMIT;

-- only the installer (and superusers) sets it: no other role, nor through
-- the table
CREATE ROLE regress_grace_app;
SET ROLE regress_grace_app;
SELECT lease.set_max_ttl(interval '1 hour');
UPDATE lease.limits SET max_ttl = interval '1 hour';
SELECT lease.max_ttl();
RESET ROLE;
DROP ROLE regress_grace_app;

DROP EXTENSION pg_lease;
DROP SCHEMA lease;
