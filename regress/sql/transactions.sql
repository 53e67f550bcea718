-- Every change belongs to the caller's transaction: ROLLBACK undoes it.
CREATE EXTENSION pg_lease;

-- acquire of an unknown name, rolled back: still unknown
BEGIN;
SELECT acquired, epoch FROM lease.acquire('tx', 'a', interval '1 minute');
ROLLBACK;
SELECT held, owner, epoch FROM lease.inspect('tx');

SELECT acquired, epoch FROM lease.acquire('tx', 'a', interval '1 minute');
CREATE TEMP TABLE held AS SELECT * FROM lease.inspect('tx');

-- renew, rolled back: the old expiry is back
BEGIN;
SELECT status FROM lease.renew('tx', 'a', 1, interval '50 seconds');
ROLLBACK;
SELECT held, epoch, expires_at = (SELECT expires_at FROM held) AS unchanged FROM lease.inspect('tx');

-- release, rolled back: still held at epoch 1, the token still works
BEGIN;
SELECT lease.release('tx', 'a', 1);
SELECT held, owner, epoch FROM lease.inspect('tx');
ROLLBACK;
SELECT held, owner, epoch FROM lease.inspect('tx');

-- takeover of a lapsed lease, rolled back: lapsed at epoch 1 again
SELECT status FROM lease.renew('tx', 'a', 1, interval '1 millisecond');
SELECT pg_sleep(0.05);
BEGIN;
SELECT acquired, epoch FROM lease.acquire('tx', 'b', interval '1 minute');
ROLLBACK;
SELECT held, owner, epoch FROM lease.inspect('tx');

-- a savepoint rolled back undoes only what followed it
BEGIN;
SELECT acquired, epoch FROM lease.acquire('tx', 'b', interval '1 minute');
SAVEPOINT s;
SELECT lease.release('tx', 'b', 2);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT held, owner, epoch FROM lease.inspect('tx');

-- calls that do not succeed write nothing: no transaction id, no row lock
BEGIN;
SELECT acquired FROM lease.acquire('tx', 'c', interval '1 minute');
SELECT status FROM lease.renew('tx', 'c', 2, interval '1 minute');
SELECT lease.release('tx', 'b', 1);
SELECT txid_current_if_assigned() IS NULL AS wrote_nothing;
COMMIT;

DROP EXTENSION pg_lease;
DROP SCHEMA lease;
