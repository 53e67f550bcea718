-- Every validation rule raises 22023 with a message naming the argument,
-- and an invalid call changes nothing.
CREATE EXTENSION pg_lease;
-- (0.5.0: no maximum TTL and so no grace after a fault, as before 0.5.0
-- and as an updated database has it; grace.sql tests them)
DO $$ BEGIN IF to_regproc('lease.set_max_ttl') IS NOT NULL THEN PERFORM lease.set_max_ttl(NULL); END IF; END $$;
\set SHOW_CONTEXT never

-- Runs q and returns 'ok' or 'SQLSTATE: message'.
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

SELECT acquired, epoch FROM lease.acquire('held', 'owner-1', interval '1 minute');
CREATE TEMP TABLE before AS SELECT * FROM lease.leases;

CREATE TEMP TABLE cases (n serial, q text);
INSERT INTO cases (q) VALUES
  -- name and owner: NULL, empty, longer than 1024 bytes
  ($$SELECT lease.acquire(NULL, 'o', '1 min')$$),
  ($$SELECT lease.acquire('', 'o', '1 min')$$),
  ($$SELECT lease.acquire(repeat('n', 1025), 'o', '1 min')$$),
  ($$SELECT lease.acquire(repeat('é', 513), 'o', '1 min')$$),
  ($$SELECT lease.acquire('held', NULL, '1 min')$$),
  ($$SELECT lease.acquire('held', '', '1 min')$$),
  ($$SELECT lease.acquire('held', repeat('o', 1025), '1 min')$$),
  ($$SELECT lease.renew(NULL, 'owner-1', 1, '1 min')$$),
  ($$SELECT lease.renew('held', '', 1, '1 min')$$),
  ($$SELECT lease.release('', 'owner-1', 1)$$),
  ($$SELECT lease.release('held', NULL, 1)$$),
  ($$SELECT lease.inspect(NULL)$$),
  ($$SELECT lease.inspect('')$$),
  ($$SELECT lease.inspect(repeat('n', 1025))$$),
  -- ttl: NULL, zero, negative, infinite, month or year part, out of range
  ($$SELECT lease.acquire('new', 'o', NULL)$$),
  ($$SELECT lease.acquire('new', 'o', '0')$$),
  ($$SELECT lease.acquire('new', 'o', '-1 second')$$),
  ($$SELECT lease.acquire('new', 'o', '1 day -25 hours')$$),
  ($$SELECT lease.acquire('new', 'o', '1 month')$$),
  ($$SELECT lease.acquire('new', 'o', '1 year')$$),
  ($$SELECT lease.acquire('new', 'o', '1 month -30 days')$$),
  ($$SELECT lease.acquire('new', 'o', '300000 years')$$),
  ($$SELECT lease.acquire('new', 'o', '110000000 days')$$),
  ($$SELECT lease.renew('held', 'owner-1', 1, NULL)$$),
  ($$SELECT lease.renew('held', 'owner-1', 1, '0')$$),
  ($$SELECT lease.renew('held', 'owner-1', 1, '2 months')$$),
  ($$SELECT lease.renew('held', 'owner-1', 1, '110000000 days')$$),
  -- epoch: NULL, zero, negative
  ($$SELECT lease.renew('held', 'owner-1', NULL, '1 min')$$),
  ($$SELECT lease.renew('held', 'owner-1', 0, '1 min')$$),
  ($$SELECT lease.release('held', 'owner-1', NULL)$$),
  ($$SELECT lease.release('held', 'owner-1', -9223372036854775808)$$),
  -- max_wait: negative
  ($$SELECT lease.acquire('held', 'o', '1 min', '-1 second')$$),
  ($$SELECT lease.acquire('held', 'o', '1 min', '-1 day 23 hours')$$),
  -- max_wait pushes the possible expiry past the end of the range
  ($$SELECT lease.acquire('held', 'o', '106000000 days', '1000000 days')$$);

SELECT n, pg_temp.try(q) AS result FROM cases ORDER BY n;

-- Valid edge cases: exactly 1024 bytes, multibyte, a mixed-sign ttl that is
-- positive overall, a ttl of days (elapsed, not calendar), a tiny ttl.
SELECT acquired, epoch FROM lease.acquire(repeat('n', 1024), repeat('o', 1024), interval '1 minute');
SELECT acquired, epoch FROM lease.acquire(repeat('é', 512), 'ö', interval '1 minute');
SELECT acquired, epoch FROM lease.acquire('mixed', 'o', interval '1 day -23 hours');
SELECT acquired, epoch FROM lease.acquire('tiny', 'o', interval '1 microsecond');
SELECT acquired, epoch FROM lease.acquire('long', 'o', interval '106000000 days');
SELECT acquired, epoch FROM lease.acquire('long-wait', 'o', interval '106000000 days', interval '1 day');
SELECT status FROM lease.renew('held', 'owner-1', 9223372036854775807, interval '1 minute');

-- The full error a caller sees, with its detail and hint.
\set VERBOSITY default
SELECT lease.acquire('held', 'o', interval '1 month');
SELECT lease.renew('held', 'owner-1', 0, interval '1 minute');
SELECT lease.acquire('held', NULL, interval '1 minute');

-- Nothing changed for the lease that was there.
SELECT l.name, l.owner, l.epoch, l.expires_at = b.expires_at AS unchanged
  FROM lease.leases AS l JOIN before AS b USING (name) ORDER BY l.name;
SELECT count(*) AS rows FROM lease.leases WHERE name = 'new';

DROP EXTENSION pg_lease;
DROP SCHEMA lease;
