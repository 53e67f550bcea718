-- The contract's state tables for acquire, renew, release and inspect, one
-- row at a time. Timestamps are printed as relative checks.
CREATE EXTENSION pg_lease;
\set SHOW_CONTEXT never

-- acquire: unknown name -> held at epoch 1
SELECT acquired, epoch, expires_at > clock_timestamp() AS in_future
  FROM lease.acquire('job-1', 'worker-a', interval '1 minute');
SELECT held, owner, epoch, expires_at > clock_timestamp() AS in_future FROM lease.inspect('job-1');

-- acquire: held by the same owner -> the same row, not extended
CREATE TEMP TABLE first AS SELECT * FROM lease.inspect('job-1');
SELECT a.acquired, a.epoch, a.expires_at = f.expires_at AS unchanged
  FROM lease.acquire('job-1', 'worker-a', interval '1 minute') AS a, first AS f;

-- acquire: held by another owner, no wait -> (false, NULL, NULL), nothing changes
SELECT acquired, epoch, expires_at FROM lease.acquire('job-1', 'worker-b', interval '1 minute');
SELECT acquired, epoch, expires_at FROM lease.acquire('job-1', 'worker-b', interval '1 minute', interval '0');
SELECT held, owner, epoch, expires_at = (SELECT expires_at FROM first) AS unchanged FROM lease.inspect('job-1');

-- renew: wrong owner, wrong epoch, then ok (and it may shorten the lease)
SELECT status, expires_at FROM lease.renew('job-1', 'worker-b', 1, interval '1 minute');
SELECT status, expires_at FROM lease.renew('job-1', 'worker-a', 2, interval '1 minute');
SELECT status, expires_at > (SELECT expires_at FROM first) AS extended
  FROM lease.renew('job-1', 'worker-a', 1, interval '1 minute');
SELECT status, expires_at < (SELECT expires_at FROM first) AS shortened
  FROM lease.renew('job-1', 'worker-a', 1, interval '30 seconds');
SELECT held, owner, epoch FROM lease.inspect('job-1');

-- release: wrong owner, wrong epoch, then ok -> released at epoch 2
SELECT lease.release('job-1', 'worker-b', 1);
SELECT lease.release('job-1', 'worker-a', 2);
SELECT lease.release('job-1', 'worker-a', 1);
SELECT held, owner, epoch, expires_at FROM lease.inspect('job-1');

-- the old token is stale at once
SELECT status, expires_at FROM lease.renew('job-1', 'worker-a', 1, interval '1 minute');
SELECT lease.release('job-1', 'worker-a', 1);
SELECT lease.release('job-1', 'worker-a', 2);

-- acquire: released at epoch 2 -> held at epoch 2, by anyone
SELECT acquired, epoch, expires_at > clock_timestamp() AS in_future
  FROM lease.acquire('job-1', 'worker-b', interval '1 minute');
SELECT held, owner, epoch FROM lease.inspect('job-1');

-- lapsed: the holder's lease runs out
SELECT acquired, epoch FROM lease.acquire('job-2', 'worker-a', interval '1 millisecond');
SELECT pg_sleep(0.05);
SELECT held, owner, epoch, expires_at < clock_timestamp() AS in_past FROM lease.inspect('job-2');
-- renew and release of a lapsed lease: lapsed, not revived, nothing changes
SELECT status, expires_at FROM lease.renew('job-2', 'worker-a', 1, interval '1 minute');
SELECT lease.release('job-2', 'worker-a', 1);
SELECT held, owner, epoch FROM lease.inspect('job-2');
-- checks run in order: owner first, then epoch, then expiry
SELECT status FROM lease.renew('job-2', 'worker-b', 1, interval '1 minute');
SELECT status FROM lease.renew('job-2', 'worker-a', 7, interval '1 minute');
SELECT lease.release('job-2', 'worker-b', 1);
SELECT lease.release('job-2', 'worker-a', 7);

-- acquire: lapsed at epoch 1 -> taken over at epoch 2, by the old owner too
SELECT acquired, epoch, expires_at > clock_timestamp() AS in_future
  FROM lease.acquire('job-2', 'worker-a', interval '1 minute');
SELECT status FROM lease.renew('job-2', 'worker-a', 2, interval '1 millisecond');
SELECT pg_sleep(0.05);
SELECT acquired, epoch FROM lease.acquire('job-2', 'worker-b', interval '1 minute');
SELECT held, owner, epoch FROM lease.inspect('job-2');
-- the old holders' tokens are stale
SELECT status FROM lease.renew('job-2', 'worker-a', 2, interval '1 minute');
SELECT status FROM lease.renew('job-2', 'worker-b', 2, interval '1 minute');

-- unknown names
SELECT held, owner, epoch, expires_at FROM lease.inspect('never-acquired');
SELECT status, expires_at FROM lease.renew('never-acquired', 'worker-a', 1, interval '1 minute');
SELECT lease.release('never-acquired', 'worker-a', 1);
SELECT count(*) AS rows_for_unknown FROM lease.leases WHERE name = 'never-acquired';

-- a release followed by a release: epochs only grow, one step per holding period
SELECT lease.release('job-2', 'worker-b', 3);
SELECT acquired, epoch FROM lease.acquire('job-2', 'worker-c', interval '1 minute');
SELECT lease.release('job-2', 'worker-c', 4);
SELECT held, owner, epoch FROM lease.inspect('job-2');

-- names and owners are compared exactly, byte for byte
SELECT acquired, epoch FROM lease.acquire('Job-3', 'Worker', interval '1 minute');
SELECT acquired, epoch FROM lease.acquire('job-3', 'worker', interval '1 minute');
SELECT acquired FROM lease.acquire('Job-3', 'worker', interval '1 minute');
SELECT name, owner, epoch FROM lease.leases ORDER BY name COLLATE "C";

-- every row the API wrote obeys the table's constraints (PostgreSQL 18
-- also lists NOT NULL constraints, as contype 'n')
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE conrelid = 'lease.leases'::regclass AND contype <> 'n' ORDER BY conname;

DROP EXTENSION pg_lease;
DROP SCHEMA lease;
