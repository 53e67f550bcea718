-- Objects in public, pg_temp and the installer-owned lease schema that
-- shadow the functions, operators and table the extension uses change
-- nothing: the functions pin search_path to pg_catalog, pg_temp and qualify
-- every object. Each attacker object records its use in hijack_log.
CREATE EXTENSION pg_lease;
\set SHOW_CONTEXT never

CREATE TABLE public.hijack_log (what text);
CREATE FUNCTION public.log_hijack(what text) RETURNS boolean LANGUAGE sql VOLATILE AS
  $$ INSERT INTO public.hijack_log VALUES (what) RETURNING true $$;

CREATE FUNCTION public.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE AS
  $$ SELECT CASE WHEN public.log_hijack('clock_timestamp') THEN timestamptz '2000-01-01' END $$;
CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE sql VOLATILE AS
  $$ SELECT CASE WHEN public.log_hijack('now') THEN timestamptz '2000-01-01' END $$;
CREATE FUNCTION public.octet_length(text) RETURNS integer LANGUAGE sql VOLATILE AS
  $$ SELECT CASE WHEN public.log_hijack('octet_length') THEN 0 END $$;
CREATE FUNCTION public.isfinite(interval) RETURNS boolean LANGUAGE sql VOLATILE AS
  $$ SELECT public.log_hijack('isfinite') $$;
CREATE FUNCTION public.pg_sleep(double precision) RETURNS void LANGUAGE sql VOLATILE AS
  $$ SELECT public.log_hijack('pg_sleep'); SELECT $$;
CREATE FUNCTION public.timezone(text, timestamptz) RETURNS timestamp LANGUAGE sql VOLATILE AS
  $$ SELECT CASE WHEN public.log_hijack('timezone') THEN timestamp '2000-01-01' END $$;
CREATE FUNCTION public.evil_text_eq(text, text) RETURNS boolean LANGUAGE sql VOLATILE AS
  $$ SELECT public.log_hijack('text =') $$;
CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.evil_text_eq);
CREATE FUNCTION public.evil_text_ne(text, text) RETURNS boolean LANGUAGE sql VOLATILE AS
  $$ SELECT NOT public.log_hijack('text <>') $$;
CREATE OPERATOR public.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = public.evil_text_ne);
CREATE FUNCTION public.evil_ts_le(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql VOLATILE AS
  $$ SELECT public.log_hijack('timestamptz <=') $$;
CREATE OPERATOR public.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = public.evil_ts_le);
CREATE FUNCTION public.evil_ts_gt(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql VOLATILE AS
  $$ SELECT public.log_hijack('timestamptz >') $$;
CREATE OPERATOR public.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = public.evil_ts_gt);
CREATE FUNCTION public.evil_ts_plus(timestamp, interval) RETURNS timestamp LANGUAGE sql VOLATILE AS
  $$ SELECT CASE WHEN public.log_hijack('timestamp +') THEN timestamp '2000-01-01' END $$;
CREATE OPERATOR public.+ (LEFTARG = timestamp, RIGHTARG = interval, FUNCTION = public.evil_ts_plus);
CREATE FUNCTION public.evil_bigint_plus(bigint, integer) RETURNS bigint LANGUAGE sql VOLATILE AS
  $$ SELECT CASE WHEN public.log_hijack('bigint +') THEN 1::bigint END $$;
CREATE OPERATOR public.+ (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = public.evil_bigint_plus);
CREATE FUNCTION public.date_part(text, interval) RETURNS double precision LANGUAGE sql VOLATILE AS
  $$ SELECT CASE WHEN public.log_hijack('date_part') THEN 0::float8 END $$;
CREATE FUNCTION public.evil_iv_le(interval, interval) RETURNS boolean LANGUAGE sql VOLATILE AS
  $$ SELECT NOT public.log_hijack('interval <=') $$;
CREATE OPERATOR public.<= (LEFTARG = interval, RIGHTARG = interval, FUNCTION = public.evil_iv_le);
CREATE FUNCTION public.evil_iv_ge(interval, interval) RETURNS boolean LANGUAGE sql VOLATILE AS
  $$ SELECT public.log_hijack('interval >=') $$;
CREATE OPERATOR public.>= (LEFTARG = interval, RIGHTARG = interval, FUNCTION = public.evil_iv_ge);
CREATE TABLE public.leases (name text, owner text, epoch bigint, expires_at timestamptz);
CREATE TEMP TABLE leases (name text, owner text, epoch bigint, expires_at timestamptz);
CREATE FUNCTION pg_temp.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE AS
  $$ SELECT CASE WHEN public.log_hijack('pg_temp.clock_timestamp') THEN timestamptz '2000-01-01' END $$;
CREATE FUNCTION lease.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE AS
  $$ SELECT CASE WHEN public.log_hijack('lease.clock_timestamp') THEN timestamptz '2000-01-01' END $$;

-- the attacker objects work where the path reaches them
SET search_path = public, pg_temp, lease, pg_catalog;
SELECT 'a'::text = 'b'::text AS shadowed_eq;
SELECT count(*) > 0 AS attacker_objects_work FROM hijack_log;
TRUNCATE hijack_log;

-- the API behaves exactly as the contract says under the hostile path
SET lease.poll_interval = '5ms';
SELECT acquired, epoch FROM lease.acquire('sp', 'a', interval '1 minute');
SELECT acquired, epoch FROM lease.acquire('sp', 'b', interval '1 minute');
SELECT acquired, epoch FROM lease.acquire('sp', 'a', interval '1 minute');
SELECT status FROM lease.renew('sp', 'a', 1, interval '1 minute');
SELECT status FROM lease.renew('sp', 'b', 1, interval '1 minute');
SELECT status FROM lease.renew('sp', 'a', 2, interval '1 minute');
SELECT held, owner, epoch FROM lease.inspect('sp');
SELECT lease.release('sp', 'a', 1);
SELECT held, owner, epoch FROM lease.inspect('sp');
SELECT acquired, epoch FROM lease.acquire('sp', 'b', interval '10 milliseconds');
SELECT acquired, epoch FROM lease.acquire('sp', 'a', interval '1 minute', interval '5 seconds');
SELECT status FROM lease.renew('sp', 'a', 3, interval '1 millisecond');
SELECT pg_catalog.pg_sleep(0.05);
SELECT status FROM lease.renew('sp', 'a', 3, interval '1 minute');
SELECT acquired, epoch FROM lease.acquire(pg_catalog.repeat('n', 1025), 'a', interval '1 minute');

RESET search_path;
SELECT count(*) AS hijacked_calls FROM public.hijack_log;
SELECT count(*) AS rows_in_public_leases FROM public.leases;
SELECT count(*) AS rows_in_temp_leases FROM pg_temp.leases;

DROP FUNCTION lease.clock_timestamp();
DROP EXTENSION pg_lease;
DROP SCHEMA lease;
DROP OPERATOR public.= (text, text);
DROP OPERATOR public.<> (text, text);
DROP OPERATOR public.<= (timestamptz, timestamptz);
DROP OPERATOR public.> (timestamptz, timestamptz);
DROP OPERATOR public.+ (timestamp, interval);
DROP OPERATOR public.+ (bigint, integer);
DROP FUNCTION public.clock_timestamp(), public.now(), public.octet_length(text),
  public.isfinite(interval), public.pg_sleep(double precision), public.timezone(text, timestamptz),
  public.evil_text_eq(text, text), public.evil_text_ne(text, text),
  public.evil_ts_le(timestamptz, timestamptz), public.evil_ts_gt(timestamptz, timestamptz),
  public.evil_ts_plus(timestamp, interval), public.evil_bigint_plus(bigint, integer),
  public.log_hijack(text);
DROP TABLE public.leases, public.hijack_log;
