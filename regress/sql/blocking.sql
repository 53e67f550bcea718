-- Blocking acquisition in one session: a waiter takes over a lease the
-- moment it lapses; an exhausted wait raises 57014 naming the lease; a
-- statement_timeout still interrupts the wait; REPEATABLE READ and
-- SERIALIZABLE refuse to wait; lease.poll_interval is validated.
-- (Waiting for another session's release is in the isolation suite.)
CREATE EXTENSION pg_lease;
\set SHOW_CONTEXT never
SET lease.poll_interval = '5ms';

SELECT acquired, epoch FROM lease.acquire('b', 'holder', interval '1 second');
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS t;
SELECT acquired, epoch FROM lease.acquire('b', 'waiter', interval '1 minute', interval '30 seconds');
SELECT clock_timestamp() - t >= interval '500 milliseconds' AS waited_for_expiry FROM t0;
SELECT held, owner, epoch FROM lease.inspect('b');

-- the wait runs out: 57014, with a message that is not statement_timeout's
SELECT acquired FROM lease.acquire('b', 'other', interval '1 minute', interval '50 milliseconds');
-- statement_timeout interrupts a wait as usual
SET statement_timeout = '100ms';
SELECT acquired FROM lease.acquire('b', 'other', interval '1 minute', interval '30 seconds');
RESET statement_timeout;
-- neither changed anything
SELECT held, owner, epoch FROM lease.inspect('b');

-- max_wait NULL or zero: no waiting
SELECT acquired, epoch FROM lease.acquire('b', 'other', interval '1 minute', NULL);
SELECT acquired, epoch FROM lease.acquire('b', 'other', interval '1 minute', interval '0');

-- a waiter that finds the lease free does not wait at all
SELECT acquired, epoch FROM lease.acquire('free', 'x', interval '1 minute', interval '1 hour');

-- blocking acquire needs READ COMMITTED, whether or not it would wait
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT acquired FROM lease.acquire('free-2', 'x', interval '1 minute', interval '1 second');
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT acquired FROM lease.acquire('free-2', 'x', interval '1 minute', interval '1 second');
ROLLBACK;
-- a non-blocking acquire works at any isolation level
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT acquired, epoch FROM lease.acquire('free-2', 'x', interval '1 minute');
SELECT acquired, epoch FROM lease.acquire('free-2', 'x', interval '1 minute', interval '0');
COMMIT;
SELECT held, owner, epoch FROM lease.inspect('free-2');

-- lease.poll_interval is read when a call first waits, and must be a
-- positive, finite interval
SET lease.poll_interval = 'soon';
SELECT acquired FROM lease.acquire('b', 'other', interval '1 minute', interval '1 second');
SET lease.poll_interval = '0';
SELECT acquired FROM lease.acquire('b', 'other', interval '1 minute', interval '1 second');
SET lease.poll_interval = '-5ms';
SELECT acquired FROM lease.acquire('b', 'other', interval '1 minute', interval '1 second');
-- not read when nothing waits
SELECT acquired, epoch FROM lease.acquire('b', 'waiter', interval '1 minute', interval '1 second');
RESET lease.poll_interval;
SELECT acquired FROM lease.acquire('b', 'other', interval '1 minute', interval '30 milliseconds');

DROP EXTENSION pg_lease;
DROP SCHEMA lease;
