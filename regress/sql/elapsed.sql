-- ttl is elapsed time: a day is 24 hours whatever the session's time zone.
-- The session's zone here is a POSIX zone whose clocks spring forward one
-- hour at the next midnight, so that calendar arithmetic (timestamptz +
-- interval) would give a lease of two days one hour short.
CREATE EXTENSION pg_lease;
-- (0.5.0: no maximum TTL and so no grace after a fault, as before 0.5.0
-- and as an updated database has it; grace.sql tests them)
DO $$ BEGIN IF to_regproc('lease.set_max_ttl') IS NOT NULL THEN PERFORM lease.set_max_ttl(NULL); END IF; END $$;

SELECT set_config('TimeZone',
         format('LST0LDT,M%s.%s.%s/0,M%s.1.0/0',
                extract(month FROM d)::int, least(ceil(extract(day FROM d) / 7.0), 5)::int,
                extract(dow FROM d)::int, (extract(month FROM d)::int + 5) % 12 + 1),
         false) IS NOT NULL AS zone_set
  FROM (SELECT (clock_timestamp() AT TIME ZONE 'UTC')::date + 1 AS d) AS tomorrow;

CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS t;
-- the zone does jump within the next two days: calendar arithmetic is short
SELECT round(extract(epoch FROM (t + interval '2 days') - t) / 3600) AS calendar_hours FROM t0;

SELECT acquired, epoch, extract(epoch FROM expires_at - t) BETWEEN 172800 AND 172800 + 60 AS two_elapsed_days
  FROM lease.acquire('dst', 'o', interval '2 days'), t0;
SELECT status, extract(epoch FROM expires_at - clock_timestamp()) BETWEEN 172800 - 60 AND 172800 AS two_elapsed_days
  FROM lease.renew('dst', 'o', 1, interval '48 hours');
SELECT acquired, extract(epoch FROM expires_at - clock_timestamp()) BETWEEN 86400 * 3 - 60 AND 86400 * 3 AS three_elapsed_days
  FROM lease.acquire('dst-2', 'o', interval '1 day 48:00:00');

RESET TimeZone;
DROP EXTENSION pg_lease;
DROP SCHEMA lease;
