
-- pg_lease 0.5.0 to 0.5.1: expiring ownership of named resources with fencing epochs
--
-- Rendered by pglease-gen from templates/pg_lease--0.5.0--0.5.1.sql.tmpl; edit the template, not this file.

\echo Use "ALTER EXTENSION pg_lease UPDATE TO '0.5.1'" to load this file. \quit

-- Every lease, session, owner and epoch held now stays as it is.

-- The grace's two unlogged sequences on PostgreSQL 15 and later, where a
-- database upgraded from 14 (pg_upgrade) lacks them.
DO $do$
BEGIN
    IF current_setting('server_version_num')::int >= 150000 AND to_regclass('@extschema@.grace_band') IS NULL
       AND to_regclass('@extschema@.grace_end') IS NULL THEN
        EXECUTE 'CREATE UNLOGGED SEQUENCE @extschema@.grace_band MINVALUE -1 START -1';
        EXECUTE 'CREATE UNLOGGED SEQUENCE @extschema@.grace_end';
        EXECUTE 'REVOKE ALL ON SEQUENCE @extschema@.grace_band, @extschema@.grace_end FROM PUBLIC';
    END IF;
END
$do$;

-- enter_era() finds them by OID, never by name.
CREATE OR REPLACE FUNCTION @extschema@.enter_era(p_need numeric, p_new_era boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_sysid   bigint;
    v_tli     bigint;
    v_db      oid;
    v_home    oid := '@extschema@.eras'::regclass;
    v_now     record;
    v_top     record;
    v_max     bigint;   -- the highest band the new era must be above
    v_own     boolean;  -- the highest era is this line's own
    v_gen     bigint;
    v_base    bigint;
    v_n       bigint;
    v_band    bigint;
    v_grace   timestamptz;  -- the new era's grace: until then no new holder
    v_first   timestamptz;  -- the grace of a try of this entry that was rolled back
    v_band_seq regclass;    -- the unlogged sequences that keep that try's band
    v_end_seq  regclass;    -- and its grace's end
BEGIN
    IF pg_is_in_recovery() THEN
        RAISE EXCEPTION 'pg_lease grants nothing on a standby'
            USING ERRCODE = '25006', HINT = 'Connect to the primary; a promotion begins a new era by itself.';
    END IF;
    IF p_need > 9223372036854775807 THEN
        RAISE EXCEPTION 'the lease has used every epoch a bigint holds'
            USING ERRCODE = '22003', HINT = 'Use another name.';
    END IF;
    -- Valid: nothing to enter, and no lock taken (the lock lasts until
    -- the caller's transaction ends: a blocking acquire that called this
    -- and then waits for its lease would hold up every entry meanwhile).
    -- Valid is of this run of the server and of this database (a copy
    -- made with CREATE DATABASE ... TEMPLATE carries its template's row).
    v_db := (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());
    SELECT c.band, c.boot, c.last_epoch, c.database_oid INTO v_now FROM @extschema@.era_now AS c LIMIT 1;
    IF NOT p_new_era AND v_now.boot = pg_postmaster_start_time() AND v_now.database_oid = v_db
       AND (p_need IS NULL OR p_need <= v_now.last_epoch) THEN
        RETURN v_now.band;
    END IF;
    LOCK TABLE @extschema@.eras IN SHARE ROW EXCLUSIVE MODE;
    SELECT c.band, c.boot, c.last_epoch, c.database_oid INTO v_now FROM @extschema@.era_now AS c LIMIT 1;
    IF NOT p_new_era AND v_now.boot = pg_postmaster_start_time() AND v_now.database_oid = v_db
       AND (p_need IS NULL OR p_need <= v_now.last_epoch) THEN
        RETURN v_now.band;  -- another call has just entered it
    END IF;
    v_sysid := (pg_control_system()).system_identifier;
    v_tli := CASE WHEN pg_catalog.pg_is_in_recovery() THEN NULL
         ELSE ('x' || pg_catalog.left(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 8))::bit(32)::bigint END;
    -- The highest recorded era, and whether every row of its band was
    -- entered here (this cluster, this database, this table); a row that
    -- came with a restore or a copy makes it another's.
    SELECT max(r.band) AS band,
           bool_and(r.system_identifier = v_sysid AND r.database_oid = v_db AND r.home = v_home) AS ours,
           bool_and(r.installed) AS installed,
           max(r.generation) AS generation, max(r.base_timeline) AS base_timeline,
           max(r.timeline) AS timeline, max(r.new_eras) AS new_eras
      INTO v_top
      FROM @extschema@.eras AS r
     WHERE r.band = (SELECT max(m.band) FROM @extschema@.eras AS m);
    IF NOT p_new_era AND v_now.band = v_top.band AND v_now.database_oid = v_db AND v_top.ours AND NOT v_top.installed
       AND v_top.timeline = v_tli AND (p_need IS NULL OR p_need <= v_now.last_epoch) THEN
        -- A clean restart (a crash would have emptied era_now): nothing
        -- was lost, the era goes on.
        UPDATE @extschema@.era_now SET boot = pg_postmaster_start_time();
        -- (a transaction that did this cannot be prepared either: it holds
        -- the lock every entry waits for)
        PERFORM pg_notify('lease_era', v_now.band::text);
        RETURN v_now.band;
    END IF;
    -- Every epoch the table holds lies below the new era (rows restored or
    -- replicated without their eras, a name that used up its band).
    v_max := greatest(v_top.band,
                      (SELECT (max(l.epoch) - 1) / 4294967296 FROM @extschema@.leases AS l),
                      (SELECT (m.epoch - 1) / 4294967296 FROM @extschema@.purge_mark AS m),
                      floor((p_need - 1) / 4294967296)::bigint - 1);
    -- (an installed era with rows: they came from elsewhere, a restore of
    -- the table alone or a logical replica of it: none of this line's own)
    v_own := v_top.ours AND (NOT v_top.installed
                             OR (NOT EXISTS (SELECT FROM @extschema@.leases) AND NOT EXISTS (SELECT FROM @extschema@.purge_mark)));
    IF NOT p_new_era AND v_own AND v_top.installed AND v_top.timeline = v_tli THEN
        -- A fresh database's first grant: band 0, entered here.
        UPDATE @extschema@.eras AS r SET installed = false WHERE r.band = 0 AND r.installed;
        v_band := 0;
    ELSE
        -- Anything but a fresh database's first era may have lost grants
        -- or renewals (a crash, a promotion, a restore, rows without their
        -- eras): no name goes to a new holder until every lease those
        -- could have made has run out by its holder's clock: the longest
        -- TTL that could have been granted, with 1% for clock rate.
        v_grace := (((clock_timestamp() AT TIME ZONE 'UTC') + @extschema@.grace_length() * 1.01) AT TIME ZONE 'UTC');
        IF v_own AND v_top.timeline = v_tli THEN
            -- The same line after a crash: the next era on this timeline.
            v_gen := v_top.generation;
            v_base := v_top.base_timeline;
            v_n := v_top.new_eras + 1;
        ELSIF v_own AND v_tli > v_top.timeline AND v_tli - v_top.base_timeline <= 255 THEN
            -- A promotion: the first era of the new timeline, above every
            -- era the old timeline can enter.
            v_gen := v_top.generation;
            v_base := v_top.base_timeline;
            v_n := 0;
        END IF;
        -- new_era() goes to the next multiple of 64 above the era a
        -- grant would enter: above the eras a source that was copied (a
        -- base backup restored without archive recovery) may enter after
        -- the copy was made, up to 64 of them.
        IF p_new_era THEN
            v_n := (v_n / 64 + 1) * 64;
        END IF;
        IF v_gen IS NULL OR v_n > 8191
           OR ((v_gen)::bigint * 2097152 + (v_tli - v_base)::bigint * 8192 + (v_n)::bigint) <= v_max THEN
            -- Anything else (another cluster, database or table: pg_upgrade,
            -- a restore, a logical replica; a timeline below the recorded
            -- one; a line that used up its numbers; rows from above): the
            -- next generation above all of it. Its timelines count from 0
            -- (from 128 below this one past timeline 255), not from
            -- this server's: a standby that never saw this entry, promoted
            -- later, enters the same generation on its own timeline, which
            -- must rank above this one's.
            v_gen := coalesce(v_max, 0) / 2097152 + 1;
            v_base := CASE WHEN v_tli <= 255 THEN 0 ELSE v_tli - 128 END;
            v_n := CASE WHEN p_new_era THEN 64 ELSE 0 END;
        END IF;
        IF v_gen > 1023 THEN
            RAISE EXCEPTION 'pg_lease has no band left for a new era'
                USING ERRCODE = '54000',
                      DETAIL = format('The next era would be generation %s; there are 1023.', v_gen),
                      HINT = 'Every epoch up to bigint''s end is spoken for: purge the names and start a new database.';
        END IF;
        v_band := ((v_gen)::bigint * 2097152 + (v_tli - v_base)::bigint * 8192 + (v_n)::bigint);
        INSERT INTO @extschema@.eras (band, generation, base_timeline, timeline, new_eras, installed,
                                      system_identifier, database_oid, home)
        VALUES (v_band, v_gen, v_base, v_tli, v_n, false, v_sysid, v_db, v_home);
    END IF;
    -- The database has granted from now on: the installer's writing of
    -- the tables, for its own restore into a fresh install, ends (0.5.1).
    DECLARE
        v_installer name := (SELECT r.rolname FROM pg_catalog.pg_depend AS d
              JOIN pg_catalog.pg_extension AS e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
              JOIN pg_catalog.pg_roles AS r ON r.oid OPERATOR(pg_catalog.=) e.extowner
             WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
               AND d.objid OPERATOR(pg_catalog.=) '@extschema@.leases'::pg_catalog.regclass
               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
               AND d.deptype OPERATOR(pg_catalog.=) 'e'
               AND e.extowner OPERATOR(pg_catalog.<>) (SELECT c.relowner FROM pg_catalog.pg_class AS c
                                                        WHERE c.oid OPERATOR(pg_catalog.=) '@extschema@.leases'::pg_catalog.regclass)
               AND pg_catalog.has_table_privilege(e.extowner, '@extschema@.leases'::pg_catalog.regclass, 'INSERT'));
    BEGIN
        IF v_installer IS NOT NULL THEN
            EXECUTE pg_catalog.format('REVOKE INSERT ON TABLE @extschema@.leases, @extschema@.purge_mark, @extschema@.eras, '
                                      '@extschema@.limits, @extschema@.sessions FROM %I', v_installer);
        END IF;
    END;
    DELETE FROM @extschema@.era_now;
    IF v_grace IS NOT NULL THEN
        -- The two unlogged sequences, by OID: only this function's owner's
        -- own of those names count (the installer owns the schema and can
        -- create a relation of either name where they are missing, as on
        -- PostgreSQL 14, whose functions would run as this owner); none,
        -- none used.
        SELECT max(c.oid) FILTER (WHERE c.relname = 'grace_band'), max(c.oid) FILTER (WHERE c.relname = 'grace_end')
          INTO v_band_seq, v_end_seq
          FROM pg_class AS c
         WHERE c.relnamespace = '@extschema@'::regnamespace AND c.relname IN ('grace_band', 'grace_end')
           AND c.relkind = 'S' AND c.relpersistence = 'u'
           AND c.relowner = (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = current_user);
        IF v_band_seq IS NOT NULL AND v_end_seq IS NOT NULL THEN
            -- an earlier try of this entry, rolled back: its grace's end
            IF pg_sequence_last_value(v_band_seq) = v_band THEN
                v_first := to_timestamp(pg_sequence_last_value(v_end_seq) / 1000000.0);
            END IF;
            IF v_first IS NOT NULL THEN
                v_grace := least(v_grace, v_first);
            ELSE
                PERFORM setval(v_end_seq, (extract(epoch FROM v_grace) * 1000000)::bigint);
                PERFORM setval(v_band_seq, v_band);
            END IF;
        END IF;
    END IF;
    INSERT INTO @extschema@.era_now (band, boot, first_epoch, last_epoch, database_oid, grace_until)
    VALUES (v_band, pg_postmaster_start_time(), (v_band * 4294967296 + 1), least((v_band + 1)::numeric * 4294967296, 9223372036854775807)::bigint, v_db, v_grace);
    -- Entering an era is durable whatever lease.synchronous_commit says
    -- (a second crash must not enter it again), and a transaction that
    -- entered one cannot be prepared: PREPARE TRANSACTION refuses one that
    -- sent a notification (the channel tells listeners of the new era).
    IF current_setting('synchronous_commit') IN ('off', 'local', 'remote_write') THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    PERFORM pg_notify('lease_era', v_band::text);
    RETURN v_band;
END
$function$;

-- A database whose schema lease held the installer's objects before
-- CREATE EXTENSION may have a default and a check that chose them: both
-- again, naming pg_catalog's.
ALTER TABLE @extschema@.sessions ALTER COLUMN id SET DEFAULT ('x'::pg_catalog.text OPERATOR(pg_catalog.||) pg_catalog.substr(pg_catalog.md5(pg_catalog.gen_random_uuid()::pg_catalog.text), 1, 15))::pg_catalog.bit(60)::pg_catalog.int8;

-- Session ids are random (the owner is no secret: inspect() shows it), and
-- a session of another owner answers as one that does not exist.
-- (first out of the extension, which takes it off the list of what
-- pg_dump dumps, then dropped)
ALTER EXTENSION pg_lease DROP SEQUENCE @extschema@.session_ids;
DROP SEQUENCE @extschema@.session_ids;
CREATE OR REPLACE FUNCTION @extschema@.close_session(session bigint, owner text)
RETURNS TABLE (status text, released bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_expires timestamptz;
    v_name    text;
BEGIN
    -- Locked, so that no name joins it meanwhile (session_acquire waits).
    SELECT s.expires_at INTO v_expires
      FROM @extschema@.sessions AS s
     WHERE s.id = close_session.session AND s.owner = close_session.owner FOR UPDATE;
    released := 0;
    IF NOT FOUND THEN
        -- none of this id and owner: lapsed, as keep_alive answers
        status := 'lapsed';
        RETURN NEXT;
        RETURN;
    END IF;
    IF v_expires > clock_timestamp() THEN
        -- Every name under it is released as release() does: the epoch
        -- advances, and whoever watches the name is told.
        FOR v_name IN
            UPDATE @extschema@.leases AS l
               SET owner = NULL, expires_at = NULL, epoch = l.epoch + 1, session_id = NULL
             WHERE l.session_id = close_session.session
            RETURNING l.name
        LOOP
            released := released + 1;
            IF NOT pg_try_advisory_xact_lock(1818583411, hashtext((v_name) COLLATE "C")) THEN
                PERFORM pg_notify('lease_released', v_name);
            END IF;
        END LOOP;
        status := 'ok';
    ELSE
        status := 'lapsed';  -- its names lapsed with it: left for the next acquire
    END IF;
    DELETE FROM @extschema@.sessions AS s WHERE s.id = close_session.session;
    IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
       NOT IN ('onon', 'ononon', 'remote_applyon', 'offsession', 'onsession', 'localsession', 'remote_writesession', 'remote_applysession') THEN
        IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
           IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN
            PERFORM set_config('synchronous_commit', 'on', true);
        ELSE
            PERFORM @extschema@.durable();
        END IF;
    END IF;
    RETURN NEXT;
END
$function$;

COMMENT ON FUNCTION @extschema@.close_session(bigint, text) IS
    'close_session(session, owner): end the session; while it lives, every name under it is released as release() releases one; returns (status, released) with status ok or lapsed (also for an id of another owner''s: one answer, so that ids cannot be probed) and the count of names released.';
ALTER TABLE @extschema@.eras DROP CONSTRAINT eras_band_check,
    ADD CONSTRAINT eras_band_check CHECK (home = 0::oid OR (
        base_timeline IS NOT NULL AND generation BETWEEN 0 AND 1023 AND timeline - base_timeline BETWEEN 0 AND 255
        AND new_eras BETWEEN 0 AND 8191
        AND band = ((generation)::bigint * 2097152 + (timeline - base_timeline)::bigint * 8192 + (new_eras)::bigint)
        AND (NOT installed OR band = 0)));

-- The maximum as limit_ttl()'s body, from the table as it is (an updated
-- database keeps its maximum, or none).
-- (and a raise of it pending, which set_max_ttl() records: below)
ALTER TABLE @extschema@.limits ADD COLUMN raise_to interval, ADD COLUMN raise_at timestamptz;
DROP TRIGGER limits_changed ON @extschema@.limits;
DROP FUNCTION @extschema@.ttl_max(bigint);

-- The maximum as a constant in the plans of acquire, renew, open_session
-- and keep_alive: the body of limit_ttl(), written by limit_sync() from
-- the table at every change of it (trigger limits_changed).
CREATE FUNCTION @extschema@.limit_ttl() RETURNS interval LANGUAGE sql STABLE PARALLEL SAFE
AS 'SELECT NULL::pg_catalog.interval';

COMMENT ON FUNCTION @extschema@.limit_ttl() IS
    'internal: max_ttl() as a constant, folded into the statements that call it (limit_sync() writes its body)';

REVOKE ALL ON FUNCTION @extschema@.limit_ttl() FROM PUBLIC;

CREATE FUNCTION @extschema@.limit_sync()
RETURNS interval
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_max interval := (SELECT CASE WHEN m.id IS NULL THEN '1 minute'::pg_catalog.interval ELSE CASE WHEN m.raise_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp() THEN m.raise_to ELSE m.max_ttl END END
              FROM (SELECT) AS one LEFT JOIN @extschema@.limits AS m ON true);
BEGIN
    -- one change at a time, as set_max_ttl(), set_floor() and an era's
    -- entry (two replacements of one function at once fail)
    LOCK TABLE @extschema@.eras IN SHARE ROW EXCLUSIVE MODE;
    -- in seconds, whatever the session's IntervalStyle
    EXECUTE format('CREATE OR REPLACE FUNCTION @extschema@.limit_ttl() RETURNS interval LANGUAGE sql STABLE PARALLEL SAFE AS %L',
                   format('SELECT %s::pg_catalog.interval',
                          coalesce(quote_literal(extract(epoch FROM v_max)::text || ' seconds'), 'NULL')));
    RETURN v_max;
END
$function$;

COMMENT ON FUNCTION @extschema@.limit_sync() IS
    'internal: writes limit_ttl()''s body from the table limits';

REVOKE ALL ON FUNCTION @extschema@.limit_sync() FROM PUBLIC;

SELECT @extschema@.limit_sync();

CREATE FUNCTION @extschema@.limits_changed()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    PERFORM @extschema@.limit_sync();
    RETURN NULL;
END
$function$;

COMMENT ON FUNCTION @extschema@.limits_changed() IS
    'internal: trigger function: rewrites limit_ttl() when limits changes';

REVOKE ALL ON FUNCTION @extschema@.limits_changed() FROM PUBLIC;

CREATE TRIGGER limits_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.limits
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.limits_changed();
-- (a restore's COPY, and a session with session_replication_role = replica)
ALTER TABLE @extschema@.limits ENABLE ALWAYS TRIGGER limits_changed;

-- acquire(), session_acquire() and renew() answer in named row types
-- (a third of the instructions that building their result from the
-- function's own columns took at each call): made again.
ALTER FUNCTION @extschema@.acquire(text, text, interval, interval) RENAME TO acquire_0_5_0;
CREATE TYPE @extschema@.acquire_result AS (acquired boolean, epoch bigint, expires_at timestamptz);

COMMENT ON TYPE @extschema@.acquire_result IS
    'the answer of acquire() and session_acquire()';

CREATE FUNCTION @extschema@.acquire(name text, owner text, ttl interval, max_wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.acquire_result
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    acquired   boolean;
    epoch      bigint;
    expires_at timestamptz;
    v_now     timestamptz;
    v_owner   text;
    v_epoch   bigint;
    v_expires timestamptz;
    v_session bigint;
    v_wait    numeric;  -- seconds this call may wait for the lease (a blocking acquire)
    v_start   numeric;  -- clock_timestamp() at the start, in seconds
    v_poll    numeric;  -- lease.poll_interval in seconds, read on the first wait
    v_setting text;
    v_left    numeric;
    v_lock_timeout text;  -- the caller's lock_timeout, while a wait is bounded
    v_next    bigint;   -- the epoch a grant would take, before the era's floor
    v_joined  boolean;  -- this call settled the era: read era_now itself from now on
    v_sessioned boolean;  -- the read showed the name under a session
    v_grace   timestamptz;  -- the end of the era's grace, while it lasts
BEGIN
    -- A non-blocking call with good arguments passes in one expression;
    -- a call with max_wait checks its arguments again with max_wait's;
    -- the checks one by one, which say what is wrong, run only when those
    -- are not true.
    IF (octet_length(acquire.name) <@ int4range(1, 1024, '[]')
       AND octet_length(acquire.owner) <@ int4range(1, 1024, '[]')
       AND acquire.ttl > interval '0' AND acquire.ttl < interval '50000000 days'
       AND date_trunc('month', acquire.ttl) = interval '0'
       AND (@extschema@.limit_ttl() IS NULL OR acquire.ttl <= @extschema@.limit_ttl())
       AND acquire.max_wait IS NULL) IS NOT TRUE THEN
        IF (octet_length(acquire.name) <@ int4range(1, 1024, '[]')
           AND octet_length(acquire.owner) <@ int4range(1, 1024, '[]')
           AND acquire.ttl > interval '0' AND acquire.ttl < interval '50000000 days'
       AND date_trunc('month', acquire.ttl) = interval '0'
       AND (@extschema@.limit_ttl() IS NULL OR acquire.ttl <= @extschema@.limit_ttl())
           AND acquire.max_wait >= interval '0' AND acquire.max_wait < interval '50000000 days'
           AND extract(epoch FROM acquire.max_wait) >= 0) IS NOT TRUE THEN
            IF acquire.name IS NULL OR acquire.name = '' OR octet_length(acquire.name) > 1024 THEN
                RAISE EXCEPTION 'name must be a non-empty string of at most 1024 bytes'
                    USING ERRCODE = '22023',
                          DETAIL = CASE WHEN acquire.name IS NULL THEN 'name is NULL.'
                                        WHEN acquire.name = '' THEN 'name is empty.'
                                        ELSE format('name is %s bytes long.', octet_length(acquire.name)) END;
            END IF;
            IF acquire.owner IS NULL OR acquire.owner = '' OR octet_length(acquire.owner) > 1024 THEN
                RAISE EXCEPTION 'owner must be a non-empty string of at most 1024 bytes'
                    USING ERRCODE = '22023',
                          DETAIL = CASE WHEN acquire.owner IS NULL THEN 'owner is NULL.'
                                        WHEN acquire.owner = '' THEN 'owner is empty.'
                                        ELSE format('owner is %s bytes long.', octet_length(acquire.owner)) END;
            END IF;
            IF acquire.max_wait IS NOT NULL AND NOT isfinite(acquire.max_wait) THEN
                RAISE EXCEPTION 'max_wait must be finite'
                    USING ERRCODE = '22023', DETAIL = format('max_wait is %s.', acquire.max_wait);
            END IF;
            v_wait := coalesce(extract(epoch FROM acquire.max_wait), 0);
            IF v_wait < 0 THEN
                RAISE EXCEPTION 'max_wait must not be negative'
                    USING ERRCODE = '22023', DETAIL = format('max_wait is %s.', acquire.max_wait);
            END IF;
            IF acquire.ttl IS NULL OR NOT isfinite(acquire.ttl) THEN
                RAISE EXCEPTION 'ttl must be a finite interval'
                    USING ERRCODE = '22023', DETAIL = format('ttl is %s.', coalesce(acquire.ttl::text, 'NULL'));
            END IF;
            IF date_part('month', acquire.ttl) <> 0 OR date_part('year', acquire.ttl) <> 0 THEN
                RAISE EXCEPTION 'ttl must not have a month or year part'
                    USING ERRCODE = '22023',
                          DETAIL = format('ttl is %s: a month has no fixed length in seconds.', acquire.ttl),
                          HINT = 'Give the ttl in days, hours, minutes or seconds.';
            END IF;
            IF acquire.ttl <= interval '0' THEN
                RAISE EXCEPTION 'ttl must be positive'
                    USING ERRCODE = '22023', DETAIL = format('ttl is %s.', acquire.ttl);
            END IF;
            -- now + ttl must stay inside the timestamptz range (its end is
            -- 294277-01-01 00:00 UTC, 9224318016000 seconds after 1970-01-01). The
            -- exact check, in numeric, is needed only for a ttl or a wait of 50,000,000
            -- days or more: below that, both together fit until the year 18000.
            IF (acquire.ttl >= interval '50000000 days' OR v_wait >= 4320000000000)
               AND extract(epoch FROM clock_timestamp()) + v_wait + extract(epoch FROM acquire.ttl) >= 9224318016000 THEN
                RAISE EXCEPTION 'ttl is too long'
                    USING ERRCODE = '22023',
                          DETAIL = format('ttl is %s: the lease would expire past the end of the timestamptz range.', acquire.ttl);
            END IF;
            -- (unless a raise whose time has come covers it: folded in now)
            IF acquire.ttl > @extschema@.limit_ttl() AND NOT @extschema@.raise_due(acquire.ttl) THEN
                RAISE EXCEPTION 'ttl is longer than @extschema@.max_ttl()'
                    USING ERRCODE = '22023',
                          DETAIL = format('ttl is %s; the longest this database grants is %s.', acquire.ttl, @extschema@.limit_ttl()),
                          HINT = 'Pass a shorter ttl, or have the extension''s installer raise the maximum with @extschema@.set_max_ttl() (the grace after a fault lasts as long).';
            END IF;
        END IF;
        v_wait := extract(epoch FROM acquire.max_wait);
        IF v_wait > 0 THEN
            -- Blocking: the same steps as below, with the wait's
            -- bookkeeping, which a non-blocking call does not carry.
            IF current_setting('transaction_isolation') NOT IN ('read committed', 'read uncommitted') THEN
                RAISE EXCEPTION 'lease.acquire with max_wait needs READ COMMITTED'
                    USING ERRCODE = '25000',
                          DETAIL = format('The transaction runs at %s: its snapshot would never see the lease being released.',
                                          upper(current_setting('transaction_isolation'))),
                          HINT = 'Call it with max_wait in a READ COMMITTED transaction, or retry a non-blocking acquire yourself.';
            END IF;
            v_start := extract(epoch FROM clock_timestamp());
            LOOP
                -- Released or lapsed: take it. The write first, re-checking the
                -- lease in its WHERE, in a subtransaction, so that a caller who
                -- finds the lease taken by a concurrent contender rolls back the
                -- row lock it got on the way instead of keeping it until the end of
                -- its transaction (where it would make the new holder's renew or
                -- release wait): when a concurrent writer changed the row, the
                -- UPDATE waits for it and re-checks the newest version, taking its
                -- lock even when the check then fails. clock_timestamp() is read as
                -- the row is checked and written, after any wait.
                BEGIN
                    -- A wait for the row (behind a guard or a writer) counts
                    -- against max_wait: lock_timeout is what is left, set inside
                    -- this subtransaction, which undoes it on an error or a lost
                    -- race; restored below on success.
                    v_lock_timeout := current_setting('lock_timeout');
                    v_left := v_start + v_wait - extract(epoch FROM clock_timestamp());
                    PERFORM set_config('lock_timeout', greatest(ceil(v_left * 1000), 1)::bigint::text, true);
                    -- The era is the one in era_now, while it was entered in this
                    -- run of the server (a crash empties the unlogged table, a
                    -- restart changes the start time); its band must have room for
                    -- the epoch. Otherwise nothing is updated, and the era is
                    -- settled below. The band is the one the plan was made with
                    -- (era_first(), era_last()), until this call has settled the era.
                    -- A name held on its own is taken by a statement without the
                    -- read of sessions (which costs every call that has one in its
                    -- plan); once the read below has shown the name under a
                    -- session (v_sessioned), by its session's expiry. What the
                    -- first takes, the second would take too.
                    -- (the first try's case tested first, in one expression)
                    IF v_joined IS NOT TRUE AND v_sessioned IS NOT TRUE THEN
                        UPDATE @extschema@.leases AS l
                           SET owner = acquire.owner,
                               -- A released lease keeps its epoch (release advanced it);
                               -- a lapsed one is taken over under the next; at least the
                               -- first epoch of the era's band.
                               epoch = greatest(CASE WHEN l.owner IS NULL THEN l.epoch ELSE l.epoch + 1 END, @extschema@.era_first(@extschema@.era_mark())),
                               expires_at = (((clock_timestamp() AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC'),
                               session_id = NULL
                         WHERE l.name = acquire.name
                           AND (l.owner IS NULL OR (l.session_id IS NULL AND l.expires_at <= clock_timestamp())
                                -- (held by the caller since an earlier era: a new grant, see
                                -- held_in_era)
                                OR (l.owner = acquire.owner AND l.epoch < @extschema@.era_first(@extschema@.era_mark())))
                           AND l.epoch < @extschema@.era_last(@extschema@.era_mark())  -- (NULL, no era: no row)
                           AND (@extschema@.era_grace(@extschema@.era_mark()) IS NULL OR clock_timestamp() >= @extschema@.era_grace(@extschema@.era_mark()))
                        RETURNING true, l.epoch, l.expires_at INTO STRICT acquired, epoch, expires_at;
                    ELSIF v_joined THEN
                        IF v_sessioned THEN
                            UPDATE @extschema@.leases AS l
                               SET owner = acquire.owner,
                                   -- A released lease keeps its epoch (release advanced it);
                                   -- a lapsed one is taken over under the next; at least the
                                   -- first epoch of the era's band.
                                   epoch = greatest(CASE WHEN l.owner IS NULL THEN l.epoch ELSE l.epoch + 1 END, c.first_epoch),
                                   expires_at = (((clock_timestamp() AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC'),
                                   session_id = NULL
                              FROM @extschema@.era_now AS c
                             WHERE l.name = acquire.name
                               -- (a session's name: by its session's expiry, read locked, so
                               -- that a keep-alive in flight is waited for)
                               AND (l.owner IS NULL OR (CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id FOR SHARE), l.expires_at) END) <= clock_timestamp()
                                    -- (held by the caller since an earlier era: a new grant, see
                                    -- held_in_era)
                                    OR (l.owner = acquire.owner AND l.epoch < c.first_epoch))
                               AND c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                               AND l.epoch < c.last_epoch
                               AND (c.grace_until IS NULL OR clock_timestamp() >= c.grace_until)
                            RETURNING true, l.epoch, l.expires_at INTO STRICT acquired, epoch, expires_at;
                        ELSE
                            UPDATE @extschema@.leases AS l
                               SET owner = acquire.owner,
                                   -- A released lease keeps its epoch (release advanced it);
                                   -- a lapsed one is taken over under the next; at least the
                                   -- first epoch of the era's band.
                                   epoch = greatest(CASE WHEN l.owner IS NULL THEN l.epoch ELSE l.epoch + 1 END, c.first_epoch),
                                   expires_at = (((clock_timestamp() AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC'),
                                   session_id = NULL
                              FROM @extschema@.era_now AS c
                             WHERE l.name = acquire.name
                               AND (l.owner IS NULL OR (l.session_id IS NULL AND l.expires_at <= clock_timestamp())
                                    -- (held by the caller since an earlier era: a new grant, see
                                    -- held_in_era)
                                    OR (l.owner = acquire.owner AND l.epoch < c.first_epoch))
                               AND c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                               AND l.epoch < c.last_epoch
                               AND (c.grace_until IS NULL OR clock_timestamp() >= c.grace_until)
                            RETURNING true, l.epoch, l.expires_at INTO STRICT acquired, epoch, expires_at;
                        END IF;
                    ELSE
                        UPDATE @extschema@.leases AS l
                           SET owner = acquire.owner,
                               -- A released lease keeps its epoch (release advanced it);
                               -- a lapsed one is taken over under the next; at least the
                               -- first epoch of the era's band.
                               epoch = greatest(CASE WHEN l.owner IS NULL THEN l.epoch ELSE l.epoch + 1 END, @extschema@.era_first(@extschema@.era_mark())),
                               expires_at = (((clock_timestamp() AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC'),
                               session_id = NULL
                         WHERE l.name = acquire.name
                           -- (a session's name: by its session's expiry, read locked, so
                           -- that a keep-alive in flight is waited for)
                           AND (l.owner IS NULL OR (CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id FOR SHARE), l.expires_at) END) <= clock_timestamp()
                                -- (held by the caller since an earlier era: a new grant, see
                                -- held_in_era)
                                OR (l.owner = acquire.owner AND l.epoch < @extschema@.era_first(@extschema@.era_mark())))
                           AND l.epoch < @extschema@.era_last(@extschema@.era_mark())  -- (NULL, no era: no row)
                           AND (@extschema@.era_grace(@extschema@.era_mark()) IS NULL OR clock_timestamp() >= @extschema@.era_grace(@extschema@.era_mark()))
                        RETURNING true, l.epoch, l.expires_at INTO STRICT acquired, epoch, expires_at;
                    END IF;
                    PERFORM set_config('lock_timeout', v_lock_timeout, true);
                    IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
                       NOT IN ('onon', 'ononon', 'remote_applyon', 'offsession', 'onsession', 'localsession', 'remote_writesession', 'remote_applysession') THEN
                        IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
                           IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN
                            PERFORM set_config('synchronous_commit', 'on', true);
                        ELSE
                            PERFORM @extschema@.durable();
                        END IF;
                    END IF;
                    RETURN NEXT ROW(acquired, epoch, expires_at);
                    RETURN;
                EXCEPTION WHEN no_data_found THEN
                    NULL;  -- not taken (STRICT: no row): no lock is kept
                WHEN lock_not_available THEN
                    -- max_wait ran out while waiting for the row
                    RAISE EXCEPTION 'lease "%" could not be taken within max_wait %', acquire.name, acquire.max_wait
                        USING ERRCODE = '57014',
                              DETAIL = 'lease.acquire gave up waiting: the lease was free, but another transaction (a guard or a writer) kept its row locked.',
                              HINT = 'Retry later, pass a longer max_wait, or keep guarded transactions short.';
                END;

                -- Not taken: a plain read with a fresh snapshot says why (no lock).
                v_now := clock_timestamp();
                SELECT l.owner, l.epoch, CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id), l.expires_at) END, l.session_id
                  INTO v_owner, v_epoch, v_expires, v_session
                  FROM @extschema@.leases AS l
                 WHERE l.name = acquire.name;

                IF NOT FOUND THEN
                    -- Unknown name: above the purge mark and in the era's band.
                    -- ON CONFLICT DO NOTHING takes no row lock when another
                    -- transaction created the row first (it waits for that one to
                    -- end when it has not); the loop then reads the row.
                    v_next := coalesce((SELECT m.epoch FROM @extschema@.purge_mark AS m), 0) + 1;
                    -- The wait for a transaction that created the name and has not
                    -- ended is bounded by what is left of max_wait, as the row's is.
                    BEGIN
                        v_lock_timeout := current_setting('lock_timeout');
                        v_left := v_start + v_wait - extract(epoch FROM clock_timestamp());
                        PERFORM set_config('lock_timeout', greatest(ceil(v_left * 1000), 1)::bigint::text, true);
                        IF v_joined THEN
                            INSERT INTO @extschema@.leases AS l (name, owner, epoch, expires_at)
                            SELECT acquire.name, acquire.owner, greatest(v_next, c.first_epoch),
                                   (((v_now AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC')
                              FROM @extschema@.era_now AS c
                             WHERE c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                               AND v_next <= c.last_epoch
                               AND (c.grace_until IS NULL OR clock_timestamp() >= c.grace_until)
                            ON CONFLICT ON CONSTRAINT leases_pkey DO NOTHING
                            RETURNING l.epoch, l.expires_at INTO epoch, expires_at;
                        ELSE
                            INSERT INTO @extschema@.leases AS l (name, owner, epoch, expires_at)
                            SELECT acquire.name, acquire.owner, greatest(v_next, @extschema@.era_first(@extschema@.era_mark())),
                                   (((v_now AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC')
                             WHERE v_next <= @extschema@.era_last(@extschema@.era_mark())
                               AND (@extschema@.era_grace(@extschema@.era_mark()) IS NULL OR clock_timestamp() >= @extschema@.era_grace(@extschema@.era_mark()))
                            ON CONFLICT ON CONSTRAINT leases_pkey DO NOTHING
                            RETURNING l.epoch, l.expires_at INTO epoch, expires_at;
                        END IF;
                        PERFORM set_config('lock_timeout', v_lock_timeout, true);
                    EXCEPTION WHEN lock_not_available THEN
                        RAISE EXCEPTION 'lease "%" could not be taken within max_wait %', acquire.name, acquire.max_wait
                            USING ERRCODE = '57014',
                                  DETAIL = 'lease.acquire gave up waiting: another transaction that created this name has not ended.',
                                  HINT = 'Retry later, pass a longer max_wait, or keep guarded transactions short.';
                    END;
                    IF epoch IS NOT NULL THEN
                        -- inserted
                        IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
                           NOT IN ('onon', 'ononon', 'remote_applyon', 'offsession', 'onsession', 'localsession', 'remote_writesession', 'remote_applysession') THEN
                            IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
                               IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN
                                PERFORM set_config('synchronous_commit', 'on', true);
                            ELSE
                                PERFORM @extschema@.durable();
                            END IF;
                        END IF;
                        acquired := true;
                        RETURN NEXT ROW(acquired, epoch, expires_at);
                        RETURN;
                    END IF;
                    -- Not inserted: another transaction created the row, or the era
                    -- must be settled first (a no-op when it was the former), or
                    -- the maximum changed.
                    IF NOT (@extschema@.limit_ttl() IS NULL OR acquire.ttl <= @extschema@.limit_ttl()) AND NOT @extschema@.raise_due(acquire.ttl) THEN
                        RAISE EXCEPTION 'ttl is longer than @extschema@.max_ttl()'
                            USING ERRCODE = '22023',
                                  DETAIL = format('ttl is %s; the longest this database grants is %s.', acquire.ttl, @extschema@.limit_ttl()),
                                  HINT = 'Pass a shorter ttl, or have the extension''s installer raise the maximum with @extschema@.set_max_ttl() (the grace after a fault lasts as long).';
                    END IF;
                    BEGIN
                        v_lock_timeout := current_setting('lock_timeout');
                        v_left := v_start + v_wait - extract(epoch FROM clock_timestamp());
                        PERFORM set_config('lock_timeout', greatest(ceil(v_left * 1000), 1)::bigint::text, true);
                        PERFORM @extschema@.enter_era((v_next)::numeric, false);
                        PERFORM set_config('lock_timeout', v_lock_timeout, true);
                    EXCEPTION WHEN lock_not_available THEN
                        RAISE EXCEPTION 'lease "%" could not be taken within max_wait %', acquire.name, acquire.max_wait
                            USING ERRCODE = '57014',
                                  DETAIL = 'lease.acquire gave up waiting: another transaction that enters a new era has not ended.',
                                  HINT = 'Retry later, pass a longer max_wait, or keep guarded transactions short.';
                    END;
                    v_grace := (SELECT c.grace_until FROM @extschema@.era_now AS c
                                 WHERE c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) LIMIT 1);
                    IF v_grace > clock_timestamp() THEN
                        v_left := v_start + v_wait - extract(epoch FROM clock_timestamp());
                        IF v_left <= 0 THEN
                            RAISE EXCEPTION 'lease "%" could not be taken within max_wait %', acquire.name, acquire.max_wait
                                USING ERRCODE = '57014',
                                      DETAIL = format('lease.acquire gave up waiting: the server gives no name to a new holder until its grace after a fault ends, at %s.', v_grace),
                                      HINT = 'Retry after the grace, or pass a longer max_wait.';
                        END IF;
                        PERFORM pg_sleep(greatest(least(v_left, extract(epoch FROM v_grace) - extract(epoch FROM clock_timestamp())), 0)::float8);
                    END IF;
                    v_joined := true;
                    CONTINUE;
                END IF;

                IF v_owner = acquire.owner AND v_expires > v_now AND coalesce(v_epoch >= CASE WHEN v_joined THEN (SELECT c.first_epoch FROM @extschema@.era_now AS c WHERE c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) LIMIT 1) ELSE @extschema@.era_first(@extschema@.era_mark()) END, false) THEN
                    -- Held by the caller already, granted in this era: idempotent,
                    -- does not extend.
                    acquired := true;
                    epoch := v_epoch;
                    expires_at := v_expires;
                    RETURN NEXT ROW(acquired, epoch, expires_at);
                    RETURN;
                END IF;

                IF v_owner IS NULL OR v_expires <= v_now OR v_owner = acquire.owner THEN
                    -- Released or lapsed (or the caller's since an earlier era), yet
                    -- not taken: it changed between the two, or the era must be
                    -- settled first (a new era when this run of the server entered
                    -- none, or when the epoch does not fit the era's band: the name
                    -- used up its band, or its row came without the era it was
                    -- granted in), or the era's grace lasts, or the maximum changed.
                    IF NOT (@extschema@.limit_ttl() IS NULL OR acquire.ttl <= @extschema@.limit_ttl()) AND NOT @extschema@.raise_due(acquire.ttl) THEN
                        RAISE EXCEPTION 'ttl is longer than @extschema@.max_ttl()'
                            USING ERRCODE = '22023',
                                  DETAIL = format('ttl is %s; the longest this database grants is %s.', acquire.ttl, @extschema@.limit_ttl()),
                                  HINT = 'Pass a shorter ttl, or have the extension''s installer raise the maximum with @extschema@.set_max_ttl() (the grace after a fault lasts as long).';
                    END IF;
                    BEGIN
                        v_lock_timeout := current_setting('lock_timeout');
                        v_left := v_start + v_wait - extract(epoch FROM clock_timestamp());
                        PERFORM set_config('lock_timeout', greatest(ceil(v_left * 1000), 1)::bigint::text, true);
                        PERFORM @extschema@.enter_era((v_epoch::numeric + 1)::numeric, false);
                        PERFORM set_config('lock_timeout', v_lock_timeout, true);
                    EXCEPTION WHEN lock_not_available THEN
                        RAISE EXCEPTION 'lease "%" could not be taken within max_wait %', acquire.name, acquire.max_wait
                            USING ERRCODE = '57014',
                                  DETAIL = 'lease.acquire gave up waiting: another transaction that enters a new era has not ended.',
                                  HINT = 'Retry later, pass a longer max_wait, or keep guarded transactions short.';
                    END;
                    v_grace := (SELECT c.grace_until FROM @extschema@.era_now AS c
                                 WHERE c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) LIMIT 1);
                    IF v_grace > clock_timestamp() THEN
                        v_left := v_start + v_wait - extract(epoch FROM clock_timestamp());
                        IF v_left <= 0 THEN
                            RAISE EXCEPTION 'lease "%" could not be taken within max_wait %', acquire.name, acquire.max_wait
                                USING ERRCODE = '57014',
                                      DETAIL = format('lease.acquire gave up waiting: the server gives no name to a new holder until its grace after a fault ends, at %s.', v_grace),
                                      HINT = 'Retry after the grace, or pass a longer max_wait.';
                        END IF;
                        PERFORM pg_sleep(greatest(least(v_left, extract(epoch FROM v_grace) - extract(epoch FROM clock_timestamp())), 0)::float8);
                    END IF;
                    v_joined := true;
                    v_sessioned := v_session IS NOT NULL;
                    CONTINUE;
                END IF;

                -- Held by another owner.
                v_left := v_start + v_wait - extract(epoch FROM v_now);
                IF v_left <= 0 THEN
                    RAISE EXCEPTION 'lease "%" is still held after waiting max_wait %', acquire.name, acquire.max_wait
                        USING ERRCODE = '57014',
                              DETAIL = 'lease.acquire gave up waiting: the lease was neither released nor lapsed in time.',
                              HINT = 'Retry later, or pass a longer max_wait.';
                END IF;
                IF v_poll IS NULL THEN
                    -- Read once, on the first wait.
                    v_setting := coalesce(nullif(current_setting('lease.poll_interval', true), ''), '10ms');
                    BEGIN
                        v_poll := CASE WHEN isfinite(v_setting::interval) THEN extract(epoch FROM v_setting::interval) END;
                    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow THEN
                        v_poll := NULL;
                    END;
                    IF v_poll IS NULL OR v_poll <= 0 THEN
                        RAISE EXCEPTION 'lease.poll_interval must be a positive interval'
                            USING ERRCODE = '22023',
                                  DETAIL = format('lease.poll_interval is %L.', v_setting),
                                  HINT = format('Reset it, or set it to a duration such as %L.', '10ms');
                    END IF;
                END IF;
                -- Sleep no longer than the poll interval, nor past the holder's
                -- expiry, nor past the deadline. No lock is held while sleeping.
                PERFORM pg_sleep(greatest(least(v_poll, v_left, extract(epoch FROM v_expires) - extract(epoch FROM v_now)), 0)::float8);
            END LOOP;
        END IF;
    END IF;
    LOOP
        -- Released or lapsed: take it. The write first, re-checking the
        -- lease in its WHERE, in a subtransaction, so that a caller who
        -- finds the lease taken by a concurrent contender rolls back the
        -- row lock it got on the way instead of keeping it until the end of
        -- its transaction (where it would make the new holder's renew or
        -- release wait): when a concurrent writer changed the row, the
        -- UPDATE waits for it and re-checks the newest version, taking its
        -- lock even when the check then fails. clock_timestamp() is read as
        -- the row is checked and written, after any wait.
        BEGIN
            -- The era is the one in era_now, while it was entered in this
            -- run of the server (a crash empties the unlogged table, a
            -- restart changes the start time); its band must have room for
            -- the epoch. Otherwise nothing is updated, and the era is
            -- settled below. The band is the one the plan was made with
            -- (era_first(), era_last()), until this call has settled the era.
            -- A name held on its own is taken by a statement without the
            -- read of sessions (which costs every call that has one in its
            -- plan); once the read below has shown the name under a
            -- session (v_sessioned), by its session's expiry. What the
            -- first takes, the second would take too.
            -- (the first try's case tested first, in one expression)
            IF v_joined IS NOT TRUE AND v_sessioned IS NOT TRUE THEN
                UPDATE @extschema@.leases AS l
                   SET owner = acquire.owner,
                       -- A released lease keeps its epoch (release advanced it);
                       -- a lapsed one is taken over under the next; at least the
                       -- first epoch of the era's band.
                       epoch = greatest(CASE WHEN l.owner IS NULL THEN l.epoch ELSE l.epoch + 1 END, @extschema@.era_first(@extschema@.era_mark())),
                       expires_at = (((clock_timestamp() AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC'),
                       session_id = NULL
                 WHERE l.name = acquire.name
                   AND (l.owner IS NULL OR (l.session_id IS NULL AND l.expires_at <= clock_timestamp())
                        -- (held by the caller since an earlier era: a new grant, see
                        -- held_in_era)
                        OR (l.owner = acquire.owner AND l.epoch < @extschema@.era_first(@extschema@.era_mark())))
                   AND l.epoch < @extschema@.era_last(@extschema@.era_mark())  -- (NULL, no era: no row)
                   AND (@extschema@.era_grace(@extschema@.era_mark()) IS NULL OR clock_timestamp() >= @extschema@.era_grace(@extschema@.era_mark()))
                RETURNING true, l.epoch, l.expires_at INTO STRICT acquired, epoch, expires_at;
            ELSIF v_joined THEN
                IF v_sessioned THEN
                    UPDATE @extschema@.leases AS l
                       SET owner = acquire.owner,
                           -- A released lease keeps its epoch (release advanced it);
                           -- a lapsed one is taken over under the next; at least the
                           -- first epoch of the era's band.
                           epoch = greatest(CASE WHEN l.owner IS NULL THEN l.epoch ELSE l.epoch + 1 END, c.first_epoch),
                           expires_at = (((clock_timestamp() AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC'),
                           session_id = NULL
                      FROM @extschema@.era_now AS c
                     WHERE l.name = acquire.name
                       -- (a session's name: by its session's expiry, read locked, so
                       -- that a keep-alive in flight is waited for)
                       AND (l.owner IS NULL OR (CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id FOR SHARE), l.expires_at) END) <= clock_timestamp()
                            -- (held by the caller since an earlier era: a new grant, see
                            -- held_in_era)
                            OR (l.owner = acquire.owner AND l.epoch < c.first_epoch))
                       AND c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                       AND l.epoch < c.last_epoch
                       AND (c.grace_until IS NULL OR clock_timestamp() >= c.grace_until)
                    RETURNING true, l.epoch, l.expires_at INTO STRICT acquired, epoch, expires_at;
                ELSE
                    UPDATE @extschema@.leases AS l
                       SET owner = acquire.owner,
                           -- A released lease keeps its epoch (release advanced it);
                           -- a lapsed one is taken over under the next; at least the
                           -- first epoch of the era's band.
                           epoch = greatest(CASE WHEN l.owner IS NULL THEN l.epoch ELSE l.epoch + 1 END, c.first_epoch),
                           expires_at = (((clock_timestamp() AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC'),
                           session_id = NULL
                      FROM @extschema@.era_now AS c
                     WHERE l.name = acquire.name
                       AND (l.owner IS NULL OR (l.session_id IS NULL AND l.expires_at <= clock_timestamp())
                            -- (held by the caller since an earlier era: a new grant, see
                            -- held_in_era)
                            OR (l.owner = acquire.owner AND l.epoch < c.first_epoch))
                       AND c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                       AND l.epoch < c.last_epoch
                       AND (c.grace_until IS NULL OR clock_timestamp() >= c.grace_until)
                    RETURNING true, l.epoch, l.expires_at INTO STRICT acquired, epoch, expires_at;
                END IF;
            ELSE
                UPDATE @extschema@.leases AS l
                   SET owner = acquire.owner,
                       -- A released lease keeps its epoch (release advanced it);
                       -- a lapsed one is taken over under the next; at least the
                       -- first epoch of the era's band.
                       epoch = greatest(CASE WHEN l.owner IS NULL THEN l.epoch ELSE l.epoch + 1 END, @extschema@.era_first(@extschema@.era_mark())),
                       expires_at = (((clock_timestamp() AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC'),
                       session_id = NULL
                 WHERE l.name = acquire.name
                   -- (a session's name: by its session's expiry, read locked, so
                   -- that a keep-alive in flight is waited for)
                   AND (l.owner IS NULL OR (CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id FOR SHARE), l.expires_at) END) <= clock_timestamp()
                        -- (held by the caller since an earlier era: a new grant, see
                        -- held_in_era)
                        OR (l.owner = acquire.owner AND l.epoch < @extschema@.era_first(@extschema@.era_mark())))
                   AND l.epoch < @extschema@.era_last(@extschema@.era_mark())  -- (NULL, no era: no row)
                   AND (@extschema@.era_grace(@extschema@.era_mark()) IS NULL OR clock_timestamp() >= @extschema@.era_grace(@extschema@.era_mark()))
                RETURNING true, l.epoch, l.expires_at INTO STRICT acquired, epoch, expires_at;
            END IF;
            IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
               NOT IN ('onon', 'ononon', 'remote_applyon', 'offsession', 'onsession', 'localsession', 'remote_writesession', 'remote_applysession') THEN
                IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
                   IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN
                    PERFORM set_config('synchronous_commit', 'on', true);
                ELSE
                    PERFORM @extschema@.durable();
                END IF;
            END IF;
            RETURN NEXT ROW(acquired, epoch, expires_at);
            RETURN;
        EXCEPTION WHEN no_data_found THEN
            NULL;  -- not taken (STRICT: no row): no lock is kept
        END;

        -- Not taken: a plain read with a fresh snapshot says why (no lock).
        v_now := clock_timestamp();
        SELECT l.owner, l.epoch, CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id), l.expires_at) END, l.session_id
          INTO v_owner, v_epoch, v_expires, v_session
          FROM @extschema@.leases AS l
         WHERE l.name = acquire.name;

        IF NOT FOUND THEN
            -- Unknown name: above the purge mark and in the era's band.
            -- ON CONFLICT DO NOTHING takes no row lock when another
            -- transaction created the row first (it waits for that one to
            -- end when it has not); the loop then reads the row.
            v_next := coalesce((SELECT m.epoch FROM @extschema@.purge_mark AS m), 0) + 1;
            IF v_joined THEN
                INSERT INTO @extschema@.leases AS l (name, owner, epoch, expires_at)
                SELECT acquire.name, acquire.owner, greatest(v_next, c.first_epoch),
                       (((v_now AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC')
                  FROM @extschema@.era_now AS c
                 WHERE c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                   AND v_next <= c.last_epoch
                   AND (c.grace_until IS NULL OR clock_timestamp() >= c.grace_until)
                ON CONFLICT ON CONSTRAINT leases_pkey DO NOTHING
                RETURNING l.epoch, l.expires_at INTO epoch, expires_at;
            ELSE
                INSERT INTO @extschema@.leases AS l (name, owner, epoch, expires_at)
                SELECT acquire.name, acquire.owner, greatest(v_next, @extschema@.era_first(@extschema@.era_mark())),
                       (((v_now AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(acquire.ttl, coalesce(@extschema@.limit_ttl(), acquire.ttl))) AT TIME ZONE 'UTC')
                 WHERE v_next <= @extschema@.era_last(@extschema@.era_mark())
                   AND (@extschema@.era_grace(@extschema@.era_mark()) IS NULL OR clock_timestamp() >= @extschema@.era_grace(@extschema@.era_mark()))
                ON CONFLICT ON CONSTRAINT leases_pkey DO NOTHING
                RETURNING l.epoch, l.expires_at INTO epoch, expires_at;
            END IF;
            IF epoch IS NOT NULL THEN
                -- inserted
                IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
                   NOT IN ('onon', 'ononon', 'remote_applyon', 'offsession', 'onsession', 'localsession', 'remote_writesession', 'remote_applysession') THEN
                    IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
                       IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN
                        PERFORM set_config('synchronous_commit', 'on', true);
                    ELSE
                        PERFORM @extschema@.durable();
                    END IF;
                END IF;
                acquired := true;
                RETURN NEXT ROW(acquired, epoch, expires_at);
                RETURN;
            END IF;
            -- Not inserted: another transaction created the row, or the era
            -- must be settled first (a no-op when it was the former), or
            -- the maximum changed.
            IF NOT (@extschema@.limit_ttl() IS NULL OR acquire.ttl <= @extschema@.limit_ttl()) AND NOT @extschema@.raise_due(acquire.ttl) THEN
                RAISE EXCEPTION 'ttl is longer than @extschema@.max_ttl()'
                    USING ERRCODE = '22023',
                          DETAIL = format('ttl is %s; the longest this database grants is %s.', acquire.ttl, @extschema@.limit_ttl()),
                          HINT = 'Pass a shorter ttl, or have the extension''s installer raise the maximum with @extschema@.set_max_ttl() (the grace after a fault lasts as long).';
            END IF;
            PERFORM @extschema@.enter_era((v_next)::numeric, false);
            v_grace := (SELECT c.grace_until FROM @extschema@.era_now AS c
                         WHERE c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) LIMIT 1);
            IF v_grace > clock_timestamp() THEN
                acquired := false;
                epoch := NULL;
                expires_at := v_grace;
                RETURN NEXT ROW(acquired, epoch, expires_at);
                RETURN;
            END IF;
            v_joined := true;
            CONTINUE;
        END IF;

        IF v_owner = acquire.owner AND v_expires > v_now AND coalesce(v_epoch >= CASE WHEN v_joined THEN (SELECT c.first_epoch FROM @extschema@.era_now AS c WHERE c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) LIMIT 1) ELSE @extschema@.era_first(@extschema@.era_mark()) END, false) THEN
            -- Held by the caller already, granted in this era: idempotent,
            -- does not extend.
            acquired := true;
            epoch := v_epoch;
            expires_at := v_expires;
            RETURN NEXT ROW(acquired, epoch, expires_at);
            RETURN;
        END IF;

        IF v_owner IS NULL OR v_expires <= v_now OR v_owner = acquire.owner THEN
            -- Released or lapsed (or the caller's since an earlier era), yet
            -- not taken: it changed between the two, or the era must be
            -- settled first (a new era when this run of the server entered
            -- none, or when the epoch does not fit the era's band: the name
            -- used up its band, or its row came without the era it was
            -- granted in), or the era's grace lasts, or the maximum changed.
            IF NOT (@extschema@.limit_ttl() IS NULL OR acquire.ttl <= @extschema@.limit_ttl()) AND NOT @extschema@.raise_due(acquire.ttl) THEN
                RAISE EXCEPTION 'ttl is longer than @extschema@.max_ttl()'
                    USING ERRCODE = '22023',
                          DETAIL = format('ttl is %s; the longest this database grants is %s.', acquire.ttl, @extschema@.limit_ttl()),
                          HINT = 'Pass a shorter ttl, or have the extension''s installer raise the maximum with @extschema@.set_max_ttl() (the grace after a fault lasts as long).';
            END IF;
            PERFORM @extschema@.enter_era((v_epoch::numeric + 1)::numeric, false);
            v_grace := (SELECT c.grace_until FROM @extschema@.era_now AS c
                         WHERE c.boot = pg_postmaster_start_time() AND c.database_oid = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) LIMIT 1);
            IF v_grace > clock_timestamp() THEN
                acquired := false;
                epoch := NULL;
                expires_at := v_grace;
                RETURN NEXT ROW(acquired, epoch, expires_at);
                RETURN;
            END IF;
            v_joined := true;
            v_sessioned := v_session IS NOT NULL;
            CONTINUE;
        END IF;

        -- Held by another owner.
        acquired := false;
        epoch := NULL;
        expires_at := NULL;
        RETURN NEXT ROW(acquired, epoch, expires_at);
        RETURN;
    END LOOP;
END
$function$;

COMMENT ON FUNCTION @extschema@.acquire(text, text, interval, interval) IS
    'acquire(name, owner, ttl, max_wait => NULL): take the lease on name for owner until now + ttl; returns (acquired, epoch, expires_at). Re-acquiring a lease you hold returns it unchanged. With max_wait > 0, waits (READ COMMITTED only) until the lease is free, raising 57014 when the wait runs out.';

DO $carry$
DECLARE
    v_old     pg_catalog.oid := pg_catalog.to_regprocedure('@extschema@.acquire_0_5_0(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval)');
    v_new     pg_catalog.oid := pg_catalog.to_regprocedure('@extschema@.acquire(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval)');
    v_owner   pg_catalog.oid;
    v_script  pg_catalog.aclitem[];  -- the replacement's, as this script made it
    v_acl     pg_catalog.aclitem[];  -- the old one's, the operator's changes in it
    v_item    record;
BEGIN
    SELECT p.proowner, p.proacl INTO v_owner, v_script FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) v_new;
    SELECT p.proacl INTO v_acl FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) v_old;
    -- (nothing to carry where nobody changed them)
    IF (v_acl IS NULL AND v_script IS NULL OR v_acl OPERATOR(pg_catalog.=) v_script) IS NOT TRUE THEN
        v_acl := coalesce(v_acl, pg_catalog.acldefault('f', v_owner));
        FOR v_item IN SELECT DISTINCT a.grantee FROM pg_catalog.aclexplode(coalesce(v_script, pg_catalog.acldefault('f', v_owner))) AS a
                       WHERE a.grantee OPERATOR(pg_catalog.<>) v_owner LOOP
            EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM %s', v_new::pg_catalog.regprocedure,
                                      CASE WHEN v_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE v_item.grantee::pg_catalog.regrole::pg_catalog.text END);
        END LOOP;
        FOR v_item IN SELECT a.grantee, pg_catalog.bool_or(a.is_grantable) AS grantable FROM pg_catalog.aclexplode(v_acl) AS a
                       WHERE a.grantee OPERATOR(pg_catalog.<>) v_owner AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
                       GROUP BY a.grantee LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', v_new::pg_catalog.regprocedure,
                                      CASE WHEN v_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE v_item.grantee::pg_catalog.regrole::pg_catalog.text END,
                                      CASE WHEN v_item.grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        -- (the GRANTs of an extension's script are its initial privileges:
        -- back to the script's own)
        IF v_script IS NULL THEN
            DELETE FROM pg_catalog.pg_init_privs AS i
             WHERE i.objoid OPERATOR(pg_catalog.=) v_new AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
        ELSE
            UPDATE pg_catalog.pg_init_privs AS i SET initprivs = v_script
             WHERE i.objoid OPERATOR(pg_catalog.=) v_new AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
        END IF;
    END IF;
    DROP FUNCTION @extschema@.acquire_0_5_0(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval);
END
$carry$;

ALTER FUNCTION @extschema@.renew(text, text, bigint, interval) RENAME TO renew_0_5_0;
CREATE TYPE @extschema@.renew_result AS (status text, expires_at timestamptz);

COMMENT ON TYPE @extschema@.renew_result IS
    'the answer of renew()';

CREATE FUNCTION @extschema@.renew(name text, owner text, epoch bigint, ttl interval)
RETURNS SETOF @extschema@.renew_result
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    status     text;
    expires_at timestamptz;
    v_now     timestamptz;
    v_owner   text;
    v_epoch   bigint;
    v_expires timestamptz;
    v_session bigint;
BEGIN
    -- Good arguments pass in one expression; the checks one by one, which
    -- say what is wrong, run only when it is not true.
    IF (octet_length(renew.name) <@ int4range(1, 1024, '[]')
       AND octet_length(renew.owner) <@ int4range(1, 1024, '[]')
       AND renew.epoch >= 1
       AND renew.ttl > interval '0' AND renew.ttl < interval '50000000 days'
       AND date_trunc('month', renew.ttl) = interval '0'
       AND (@extschema@.limit_ttl() IS NULL OR renew.ttl <= @extschema@.limit_ttl())) IS NOT TRUE THEN
        IF renew.name IS NULL OR renew.name = '' OR octet_length(renew.name) > 1024 THEN
            RAISE EXCEPTION 'name must be a non-empty string of at most 1024 bytes'
                USING ERRCODE = '22023',
                      DETAIL = CASE WHEN renew.name IS NULL THEN 'name is NULL.'
                                    WHEN renew.name = '' THEN 'name is empty.'
                                    ELSE format('name is %s bytes long.', octet_length(renew.name)) END;
        END IF;
        IF renew.owner IS NULL OR renew.owner = '' OR octet_length(renew.owner) > 1024 THEN
            RAISE EXCEPTION 'owner must be a non-empty string of at most 1024 bytes'
                USING ERRCODE = '22023',
                      DETAIL = CASE WHEN renew.owner IS NULL THEN 'owner is NULL.'
                                    WHEN renew.owner = '' THEN 'owner is empty.'
                                    ELSE format('owner is %s bytes long.', octet_length(renew.owner)) END;
        END IF;
        IF renew.epoch IS NULL OR renew.epoch < 1 THEN
            RAISE EXCEPTION 'epoch must be a positive number'
                USING ERRCODE = '22023',
                      DETAIL = format('epoch is %s.', coalesce(renew.epoch::text, 'NULL')),
                      HINT = 'Pass the epoch that lease.acquire returned.';
        END IF;
        IF renew.ttl IS NULL OR NOT isfinite(renew.ttl) THEN
            RAISE EXCEPTION 'ttl must be a finite interval'
                USING ERRCODE = '22023', DETAIL = format('ttl is %s.', coalesce(renew.ttl::text, 'NULL'));
        END IF;
        IF date_part('month', renew.ttl) <> 0 OR date_part('year', renew.ttl) <> 0 THEN
            RAISE EXCEPTION 'ttl must not have a month or year part'
                USING ERRCODE = '22023',
                      DETAIL = format('ttl is %s: a month has no fixed length in seconds.', renew.ttl),
                      HINT = 'Give the ttl in days, hours, minutes or seconds.';
        END IF;
        IF renew.ttl <= interval '0' THEN
            RAISE EXCEPTION 'ttl must be positive'
                USING ERRCODE = '22023', DETAIL = format('ttl is %s.', renew.ttl);
        END IF;
        -- now + ttl must stay inside the timestamptz range (its end is
        -- 294277-01-01 00:00 UTC, 9224318016000 seconds after 1970-01-01). The
        -- exact check, in numeric, is needed only for a ttl or a wait of 50,000,000
        -- days or more: below that, both together fit until the year 18000.
        IF (renew.ttl >= interval '50000000 days')
           AND extract(epoch FROM clock_timestamp()) + 0 + extract(epoch FROM renew.ttl) >= 9224318016000 THEN
            RAISE EXCEPTION 'ttl is too long'
                USING ERRCODE = '22023',
                      DETAIL = format('ttl is %s: the lease would expire past the end of the timestamptz range.', renew.ttl);
        END IF;
        -- (unless a raise whose time has come covers it: folded in now)
        IF renew.ttl > @extschema@.limit_ttl() AND NOT @extschema@.raise_due(renew.ttl) THEN
            RAISE EXCEPTION 'ttl is longer than @extschema@.max_ttl()'
                USING ERRCODE = '22023',
                      DETAIL = format('ttl is %s; the longest this database grants is %s.', renew.ttl, @extschema@.limit_ttl()),
                      HINT = 'Pass a shorter ttl, or have the extension''s installer raise the maximum with @extschema@.set_max_ttl() (the grace after a fault lasts as long).';
        END IF;
    END IF;
    LOOP
        -- The write first, re-checking the lease in its WHERE, in a
        -- subtransaction, so that a call that is not ok keeps no row lock
        -- (a concurrent change makes the UPDATE lock the row's newest
        -- version before re-checking it).
        BEGIN
            UPDATE @extschema@.leases AS l
               SET expires_at = (((clock_timestamp() AT TIME ZONE 'UTC') + pg_catalog.interval_smaller(renew.ttl, coalesce(@extschema@.limit_ttl(), renew.ttl))) AT TIME ZONE 'UTC')
             WHERE l.name = renew.name AND l.owner = renew.owner AND l.epoch = renew.epoch
               AND l.expires_at > clock_timestamp() AND l.session_id IS NULL
            RETURNING 'ok', l.expires_at INTO STRICT status, expires_at;
            -- Committed at the session's own synchronous_commit: a renewal
            -- only extends what its holder has, and the grace after a
            -- fault outlasts any renewal the fault lost. Without a maximum
            -- there is no grace: durable, as 0.4.0's.
            IF @extschema@.limit_ttl() IS NULL THEN
                IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
                   NOT IN ('onon', 'ononon', 'remote_applyon', 'offsession', 'onsession', 'localsession', 'remote_writesession', 'remote_applysession') THEN
                    IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
                       IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN
                        PERFORM set_config('synchronous_commit', 'on', true);
                    ELSE
                        PERFORM @extschema@.durable();
                    END IF;
                END IF;
            END IF;
            RETURN NEXT ROW(status, expires_at);
            RETURN;
        EXCEPTION WHEN no_data_found THEN
            NULL;  -- not written (STRICT: no row): no lock is kept
        END;
        -- Not renewed: a plain read says why.
        v_now := clock_timestamp();
        SELECT l.owner, l.epoch, CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id), l.expires_at) END, l.session_id
          INTO v_owner, v_epoch, v_expires, v_session
          FROM @extschema@.leases AS l
         WHERE l.name = renew.name;
        status := CASE WHEN v_owner IS NULL OR v_owner <> renew.owner THEN 'not_owner'
                   WHEN v_epoch <> renew.epoch THEN 'epoch_mismatch'
                   WHEN v_expires <= v_now THEN 'lapsed'
                   ELSE 'ok' END;
        IF status = 'ok' THEN
            IF NOT (@extschema@.limit_ttl() IS NULL OR renew.ttl <= @extschema@.limit_ttl()) AND NOT @extschema@.raise_due(renew.ttl) THEN
                RAISE EXCEPTION 'ttl is longer than @extschema@.max_ttl()'
                    USING ERRCODE = '22023',
                          DETAIL = format('ttl is %s; the longest this database grants is %s.', renew.ttl, @extschema@.limit_ttl()),
                          HINT = 'Pass a shorter ttl, or have the extension''s installer raise the maximum with @extschema@.set_max_ttl() (the grace after a fault lasts as long).';
            END IF;
        END IF;
        IF status = 'ok' AND v_session IS NOT NULL THEN
            -- (no id: the owner and epoch are anyone's to read, a
            -- session's id is its holder's alone)
            RAISE EXCEPTION 'lease "%" is held under a session', renew.name
                USING ERRCODE = '55000',
                      DETAIL = 'A name held under a session lives as long as the session.',
                      HINT = 'Keep the session alive with lease.keep_alive().';
        END IF;
        EXIT WHEN status <> 'ok';  -- ok: it changed between the two; again
    END LOOP;
    expires_at := NULL;
    RETURN NEXT ROW(status, expires_at);
END
$function$;

COMMENT ON FUNCTION @extschema@.renew(text, text, bigint, interval) IS
    'renew(name, owner, epoch, ttl): set the expiry of a lease you hold to now + ttl (may shorten it); returns (status, expires_at) with status ok, not_owner, epoch_mismatch or lapsed. A lapsed lease is not revived.';

DO $carry$
DECLARE
    v_old     pg_catalog.oid := pg_catalog.to_regprocedure('@extschema@.renew_0_5_0(pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.interval)');
    v_new     pg_catalog.oid := pg_catalog.to_regprocedure('@extschema@.renew(pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.interval)');
    v_owner   pg_catalog.oid;
    v_script  pg_catalog.aclitem[];  -- the replacement's, as this script made it
    v_acl     pg_catalog.aclitem[];  -- the old one's, the operator's changes in it
    v_item    record;
BEGIN
    SELECT p.proowner, p.proacl INTO v_owner, v_script FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) v_new;
    SELECT p.proacl INTO v_acl FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) v_old;
    -- (nothing to carry where nobody changed them)
    IF (v_acl IS NULL AND v_script IS NULL OR v_acl OPERATOR(pg_catalog.=) v_script) IS NOT TRUE THEN
        v_acl := coalesce(v_acl, pg_catalog.acldefault('f', v_owner));
        FOR v_item IN SELECT DISTINCT a.grantee FROM pg_catalog.aclexplode(coalesce(v_script, pg_catalog.acldefault('f', v_owner))) AS a
                       WHERE a.grantee OPERATOR(pg_catalog.<>) v_owner LOOP
            EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM %s', v_new::pg_catalog.regprocedure,
                                      CASE WHEN v_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE v_item.grantee::pg_catalog.regrole::pg_catalog.text END);
        END LOOP;
        FOR v_item IN SELECT a.grantee, pg_catalog.bool_or(a.is_grantable) AS grantable FROM pg_catalog.aclexplode(v_acl) AS a
                       WHERE a.grantee OPERATOR(pg_catalog.<>) v_owner AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
                       GROUP BY a.grantee LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', v_new::pg_catalog.regprocedure,
                                      CASE WHEN v_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE v_item.grantee::pg_catalog.regrole::pg_catalog.text END,
                                      CASE WHEN v_item.grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        -- (the GRANTs of an extension's script are its initial privileges:
        -- back to the script's own)
        IF v_script IS NULL THEN
            DELETE FROM pg_catalog.pg_init_privs AS i
             WHERE i.objoid OPERATOR(pg_catalog.=) v_new AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
        ELSE
            UPDATE pg_catalog.pg_init_privs AS i SET initprivs = v_script
             WHERE i.objoid OPERATOR(pg_catalog.=) v_new AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
        END IF;
    END IF;
    DROP FUNCTION @extschema@.renew_0_5_0(pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.interval);
END
$carry$;

-- A raise of the maximum takes effect after a delay (set_max_ttl()
-- gains the argument: dropped and made again), and counts from then.
CREATE OR REPLACE FUNCTION @extschema@.max_ttl()
RETURNS interval
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
    SELECT (SELECT CASE WHEN m.id IS NULL THEN '1 minute'::pg_catalog.interval ELSE CASE WHEN m.raise_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp() THEN m.raise_to ELSE m.max_ttl END END
              FROM (SELECT) AS one LEFT JOIN @extschema@.limits AS m ON true);
$function$;
CREATE OR REPLACE FUNCTION @extschema@.grace_length()
RETURNS interval
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $function$
    SELECT CASE WHEN NOT EXISTS (SELECT FROM @extschema@.limits) THEN '1 minute'::interval
                ELSE (SELECT greatest(CASE WHEN m.raise_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp() THEN m.raise_to ELSE m.max_ttl END, CASE WHEN clock_timestamp() < m.previous_until THEN m.previous END)
                        FROM @extschema@.limits AS m) END;
$function$;
ALTER FUNCTION @extschema@.set_max_ttl(interval) RENAME TO set_max_ttl_0_5_0;
CREATE FUNCTION @extschema@.set_max_ttl(ttl interval, delay interval DEFAULT interval '1 minute')
RETURNS interval
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_old   interval;
    v_now   interval;
BEGIN
    IF set_max_ttl.ttl IS NOT NULL
       AND (set_max_ttl.ttl > interval '0' AND set_max_ttl.ttl < interval '50000000 days'
            AND date_trunc('month', set_max_ttl.ttl) = interval '0') IS NOT TRUE THEN
        RAISE EXCEPTION 'ttl must be a positive interval of days, hours, minutes or seconds below 50000000 days, or NULL'
            USING ERRCODE = '22023', DETAIL = format('ttl is %s.', set_max_ttl.ttl);
    END IF;
    IF (set_max_ttl.delay >= interval '0' AND set_max_ttl.delay < interval '50000000 days'
        AND date_trunc('month', set_max_ttl.delay) = interval '0') IS NOT TRUE THEN
        RAISE EXCEPTION 'delay must be an interval of days, hours, minutes or seconds from 0 to 50000000 days'
            USING ERRCODE = '22023', DETAIL = format('delay is %s.', coalesce(set_max_ttl.delay::text, 'NULL'));
    END IF;
    -- Every grant and renewal in flight ends first, and none begins
    -- until this commits: each then takes its lock, and so sees the
    -- change, and makes its plans again with the new maximum (0.5.1).
    LOCK TABLE @extschema@.leases, @extschema@.sessions IN SHARE MODE;
    -- one change at a time, as set_floor() and an era's entry
    LOCK TABLE @extschema@.eras IN SHARE ROW EXCLUSIVE MODE;
    v_old := @extschema@.grace_length();
    v_now := (SELECT CASE WHEN m.id IS NULL THEN '1 minute'::pg_catalog.interval ELSE CASE WHEN m.raise_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp() THEN m.raise_to ELSE m.max_ttl END END
              FROM (SELECT) AS one LEFT JOIN @extschema@.limits AS m ON true);
    IF set_max_ttl.ttl IS NOT NULL AND v_now IS NOT NULL AND set_max_ttl.ttl > v_now
       AND set_max_ttl.delay > interval '0'
       AND EXISTS (SELECT FROM @extschema@.eras AS r WHERE NOT r.installed) THEN
        -- Raised, in a database that has granted: the new maximum takes
        -- effect only after the delay (0.5.1), so that a standby that
        -- replays this within the delay, and is promoted, counts its
        -- grace with it before any lease can have been granted under it.
        -- The current maximum stays (a raise pending is replaced).
        INSERT INTO @extschema@.limits AS m (id, max_ttl, raise_to, raise_at)
        VALUES (true, v_now, set_max_ttl.ttl, (((clock_timestamp() AT TIME ZONE 'UTC') + set_max_ttl.delay) AT TIME ZONE 'UTC'))
        ON CONFLICT ON CONSTRAINT limits_pkey DO UPDATE
           SET max_ttl = excluded.max_ttl, raise_to = excluded.raise_to, raise_at = excluded.raise_at;
        RAISE NOTICE 'the maximum ttl becomes % at %', set_max_ttl.ttl, (((clock_timestamp() AT TIME ZONE 'UTC') + set_max_ttl.delay) AT TIME ZONE 'UTC')
            USING DETAIL = format('Until then it stays %s.', v_now);
    ELSE
        -- Lowered, kept, removed (NULL: fencing only), raised without a
        -- delay, or set in a database that never granted: at once, and a
        -- raise pending is dropped.
        INSERT INTO @extschema@.limits AS m (id, max_ttl) VALUES (true, set_max_ttl.ttl)
        ON CONFLICT ON CONSTRAINT limits_pkey DO UPDATE SET max_ttl = excluded.max_ttl, raise_to = NULL, raise_at = NULL;
    END IF;
    IF v_old IS NOT NULL AND (set_max_ttl.ttl IS NULL OR set_max_ttl.ttl < v_old)
       AND EXISTS (SELECT FROM @extschema@.eras AS r WHERE NOT r.installed) THEN
        -- Lowered: a lease granted or renewed before may run for the old
        -- maximum, so the grace keeps it until then, whatever the table
        -- shows (0.5.1: 0.5.0 kept it only when its snapshot showed a
        -- name held, and missed a grant in flight and a name lapsed and
        -- purged whose renewal a crash had lost). Only a database that
        -- never granted (no era entered: every grant enters one first)
        -- has nothing to keep.
        UPDATE @extschema@.limits
           SET previous = v_old, previous_until = (((clock_timestamp() AT TIME ZONE 'UTC') + v_old) AT TIME ZONE 'UTC');
    END IF;
    -- durable whatever the session's synchronous_commit: a lease granted
    -- under a longer maximum must not outlive it in a crash
    IF current_setting('synchronous_commit') IN ('off', 'local', 'remote_write') THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    RETURN set_max_ttl.ttl;
END
$function$;

COMMENT ON FUNCTION @extschema@.set_max_ttl(interval, interval) IS
    'set_max_ttl(ttl, delay): the longest ttl this database grants or renews, and so the grace after a fault (NULL: no maximum and no grace, fencing only); a lowered maximum takes effect at once and shortens the grace only once every lease granted under the old one has run out; a raised one takes effect after delay (default 1 minute; at once in a database that never granted), so that a standby promoted within it has it; only the installer (and superusers) may call it';

REVOKE ALL ON FUNCTION @extschema@.set_max_ttl(interval, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.set_max_ttl(interval, interval) TO @extowner@;

DO $carry$
DECLARE
    v_old     pg_catalog.oid := pg_catalog.to_regprocedure('@extschema@.set_max_ttl_0_5_0(pg_catalog.interval)');
    v_new     pg_catalog.oid := pg_catalog.to_regprocedure('@extschema@.set_max_ttl(pg_catalog.interval, pg_catalog.interval)');
    v_owner   pg_catalog.oid;
    v_script  pg_catalog.aclitem[];  -- the replacement's, as this script made it
    v_acl     pg_catalog.aclitem[];  -- the old one's, the operator's changes in it
    v_item    record;
BEGIN
    SELECT p.proowner, p.proacl INTO v_owner, v_script FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) v_new;
    SELECT p.proacl INTO v_acl FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) v_old;
    -- (nothing to carry where nobody changed them)
    IF (v_acl IS NULL AND v_script IS NULL OR v_acl OPERATOR(pg_catalog.=) v_script) IS NOT TRUE THEN
        v_acl := coalesce(v_acl, pg_catalog.acldefault('f', v_owner));
        FOR v_item IN SELECT DISTINCT a.grantee FROM pg_catalog.aclexplode(coalesce(v_script, pg_catalog.acldefault('f', v_owner))) AS a
                       WHERE a.grantee OPERATOR(pg_catalog.<>) v_owner LOOP
            EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM %s', v_new::pg_catalog.regprocedure,
                                      CASE WHEN v_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE v_item.grantee::pg_catalog.regrole::pg_catalog.text END);
        END LOOP;
        FOR v_item IN SELECT a.grantee, pg_catalog.bool_or(a.is_grantable) AS grantable FROM pg_catalog.aclexplode(v_acl) AS a
                       WHERE a.grantee OPERATOR(pg_catalog.<>) v_owner AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
                       GROUP BY a.grantee LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', v_new::pg_catalog.regprocedure,
                                      CASE WHEN v_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE v_item.grantee::pg_catalog.regrole::pg_catalog.text END,
                                      CASE WHEN v_item.grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        -- (the GRANTs of an extension's script are its initial privileges:
        -- back to the script's own)
        IF v_script IS NULL THEN
            DELETE FROM pg_catalog.pg_init_privs AS i
             WHERE i.objoid OPERATOR(pg_catalog.=) v_new AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
        ELSE
            UPDATE pg_catalog.pg_init_privs AS i SET initprivs = v_script
             WHERE i.objoid OPERATOR(pg_catalog.=) v_new AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
        END IF;
    END IF;
    DROP FUNCTION @extschema@.set_max_ttl_0_5_0(pg_catalog.interval);
END
$carry$;

CREATE FUNCTION @extschema@.raise_due(ttl interval)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_due boolean;
BEGIN
    -- A raise whose time has come, up to at least ttl: folded into
    -- limit_ttl() now (the statements that call it are planned again),
    -- durably. The raise itself is in the table, and counts for the
    -- grace from raise_at whether or not this commits.
    SELECT m.raise_at <= clock_timestamp() AND (m.raise_to IS NULL OR m.raise_to >= raise_due.ttl)
      INTO v_due FROM @extschema@.limits AS m;
    IF v_due IS NOT TRUE THEN
        RETURN false;
    END IF;
    PERFORM @extschema@.limit_sync();
    IF current_setting('synchronous_commit') IN ('off', 'local', 'remote_write') THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    RETURN true;
END
$function$;

COMMENT ON FUNCTION @extschema@.raise_due(interval) IS
    'internal: folds a raise of the maximum whose time has come into limit_ttl() (true), when ttl needs it';

REVOKE ALL ON FUNCTION @extschema@.raise_due(interval) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.open_session(owner text, ttl interval)
RETURNS TABLE (session bigint, expires_at timestamptz, era bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF (octet_length(open_session.owner) <@ int4range(1, 1024, '[]')
       AND open_session.ttl > interval '0' AND open_session.ttl < interval '50000000 days'
       AND date_trunc('month', open_session.ttl) = interval '0'
       AND (@extschema@.limit_ttl() IS NULL OR open_session.ttl <= @extschema@.limit_ttl())) IS NOT TRUE THEN
        IF open_session.owner IS NULL OR open_session.owner = '' OR octet_length(open_session.owner) > 1024 THEN
            RAISE EXCEPTION 'owner must be a non-empty string of at most 1024 bytes'
                USING ERRCODE = '22023',
                      DETAIL = CASE WHEN open_session.owner IS NULL THEN 'owner is NULL.'
                                    WHEN open_session.owner = '' THEN 'owner is empty.'
                                    ELSE format('owner is %s bytes long.', octet_length(open_session.owner)) END;
        END IF;
        IF open_session.ttl IS NULL OR NOT isfinite(open_session.ttl) THEN
            RAISE EXCEPTION 'ttl must be a finite interval'
                USING ERRCODE = '22023', DETAIL = format('ttl is %s.', coalesce(open_session.ttl::text, 'NULL'));
        END IF;
        IF date_part('month', open_session.ttl) <> 0 OR date_part('year', open_session.ttl) <> 0 THEN
            RAISE EXCEPTION 'ttl must not have a month or year part'
                USING ERRCODE = '22023',
                      DETAIL = format('ttl is %s: a month has no fixed length in seconds.', open_session.ttl),
                      HINT = 'Give the ttl in days, hours, minutes or seconds.';
        END IF;
        IF open_session.ttl <= interval '0' THEN
            RAISE EXCEPTION 'ttl must be positive'
                USING ERRCODE = '22023', DETAIL = format('ttl is %s.', open_session.ttl);
        END IF;
        -- now + ttl must stay inside the timestamptz range (its end is
        -- 294277-01-01 00:00 UTC, 9224318016000 seconds after 1970-01-01). The
        -- exact check, in numeric, is needed only for a ttl or a wait of 50,000,000
        -- days or more: below that, both together fit until the year 18000.
        IF (open_session.ttl >= interval '50000000 days')
           AND extract(epoch FROM clock_timestamp()) + 0 + extract(epoch FROM open_session.ttl) >= 9224318016000 THEN
            RAISE EXCEPTION 'ttl is too long'
                USING ERRCODE = '22023',
                      DETAIL = format('ttl is %s: the lease would expire past the end of the timestamptz range.', open_session.ttl);
        END IF;
        -- (unless a raise whose time has come covers it: folded in now)
        IF open_session.ttl > @extschema@.limit_ttl() AND NOT @extschema@.raise_due(open_session.ttl) THEN
            RAISE EXCEPTION 'ttl is longer than @extschema@.max_ttl()'
                USING ERRCODE = '22023',
                      DETAIL = format('ttl is %s; the longest this database grants is %s.', open_session.ttl, @extschema@.limit_ttl()),
                      HINT = 'Pass a shorter ttl, or have the extension''s installer raise the maximum with @extschema@.set_max_ttl() (the grace after a fault lasts as long).';
        END IF;
    END IF;
    LOOP
        INSERT INTO @extschema@.sessions AS s (owner, ttl, expires_at)
        SELECT open_session.owner, open_session.ttl, (((clock_timestamp() AT TIME ZONE 'UTC') + open_session.ttl) AT TIME ZONE 'UTC')
         WHERE (@extschema@.limit_ttl() IS NULL OR open_session.ttl <= @extschema@.limit_ttl())
        RETURNING s.id, s.expires_at INTO session, expires_at;
        EXIT WHEN FOUND;
        IF NOT (@extschema@.limit_ttl() IS NULL OR open_session.ttl <= @extschema@.limit_ttl()) AND NOT @extschema@.raise_due(open_session.ttl) THEN
            RAISE EXCEPTION 'ttl is longer than @extschema@.max_ttl()'
                USING ERRCODE = '22023',
                      DETAIL = format('ttl is %s; the longest this database grants is %s.', open_session.ttl, @extschema@.limit_ttl()),
                      HINT = 'Pass a shorter ttl, or have the extension''s installer raise the maximum with @extschema@.set_max_ttl() (the grace after a fault lasts as long).';
        END IF;
    END LOOP;
    -- the era, as keep_alive reports it
    era := @extschema@.era_first(@extschema@.era_mark());
    -- durable, as a grant: a session's number is never given twice
    IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
       NOT IN ('onon', 'ononon', 'remote_applyon', 'offsession', 'onsession', 'localsession', 'remote_writesession', 'remote_applysession') THEN
        IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
           IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN
            PERFORM set_config('synchronous_commit', 'on', true);
        ELSE
            PERFORM @extschema@.durable();
        END IF;
    END IF;
    RETURN NEXT;
END
$function$;

-- keep_alive() reports how many of the session's names release() has
-- released (its result gains a column: made again, as a named row type).
ALTER TABLE @extschema@.sessions ADD COLUMN released bigint NOT NULL DEFAULT 0;
ALTER FUNCTION @extschema@.keep_alive(bigint, text) RENAME TO keep_alive_0_5_0;
CREATE TYPE @extschema@.keep_alive_result AS (status text, expires_at timestamptz, era bigint, released bigint);

COMMENT ON TYPE @extschema@.keep_alive_result IS
    'the answer of keep_alive()';

CREATE FUNCTION @extschema@.keep_alive(session bigint, owner text)
RETURNS SETOF @extschema@.keep_alive_result
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_ttl   interval;
BEGIN
    -- One row, whatever the number of names; committed at the session's
    -- own synchronous_commit, as a renewal.
    RETURN QUERY UPDATE @extschema@.sessions AS s
       SET expires_at = (((clock_timestamp() AT TIME ZONE 'UTC') + s.ttl) AT TIME ZONE 'UTC')
     WHERE s.id = keep_alive.session AND s.owner = keep_alive.owner AND s.expires_at > clock_timestamp()
       AND (@extschema@.limit_ttl() IS NULL OR s.ttl <= @extschema@.limit_ttl())
    -- The era's first epoch (NULL before this run of the server has
    -- entered one), folded into the plan: a holder that sees it change
    -- checks that the server still has its names (a failover or a restore
    -- can have lost a grant, not the session). The row goes straight to
    -- the answer.
    RETURNING 'ok'::text, s.expires_at, @extschema@.era_first(@extschema@.era_mark()), s.released;
    IF FOUND THEN
        -- (without a maximum there is no grace: durable, as a renewal)
        IF @extschema@.limit_ttl() IS NULL THEN
            IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
               NOT IN ('onon', 'ononon', 'remote_applyon', 'offsession', 'onsession', 'localsession', 'remote_writesession', 'remote_applysession') THEN
                IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
                   IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN
                    PERFORM set_config('synchronous_commit', 'on', true);
                ELSE
                    PERFORM @extschema@.durable();
                END IF;
            END IF;
        END IF;
        RETURN;
    END IF;
    SELECT s.ttl INTO v_ttl FROM @extschema@.sessions AS s
     WHERE s.id = keep_alive.session AND s.owner = keep_alive.owner;
    IF v_ttl > @extschema@.limit_ttl() THEN
        RAISE EXCEPTION 'the session''s ttl is longer than @extschema@.max_ttl()'
            USING ERRCODE = '22023',
                  DETAIL = format('The session''s ttl is %s; the longest this database renews is %s.', v_ttl, @extschema@.limit_ttl()),
                  HINT = 'Close it and open a session with a shorter ttl.';
    END IF;
    -- no live session of this id and owner (lapsed, closed, purged, or
    -- none): lapsed, one answer for all (0.5.1; 0.5.0 said not_owner for
    -- another owner's, which told a caller that the id was in use)
    RETURN QUERY SELECT 'lapsed'::text, NULL::timestamptz, NULL::bigint, NULL::bigint;
END
$function$;

COMMENT ON FUNCTION @extschema@.keep_alive(bigint, text) IS
    'keep_alive(session, owner): renew the session, and so every name under it, until now + its ttl, in one row; returns (status, expires_at, era, released) with status ok or lapsed (also for an id of another owner''s: one answer, so that ids cannot be probed); era an identifier of the server''s era (NULL before it has entered one since it started): when it changes, a failover or restore may have lost grants made under the session, and its holder checks that the server still has its names (lease.list); released how many of its names release() has released (by anyone who gave their owner and epoch): when it grows by more than its holder released, it checks them too. A lapsed session is not revived.';

DO $carry$
DECLARE
    v_old     pg_catalog.oid := pg_catalog.to_regprocedure('@extschema@.keep_alive_0_5_0(pg_catalog.int8, pg_catalog.text)');
    v_new     pg_catalog.oid := pg_catalog.to_regprocedure('@extschema@.keep_alive(pg_catalog.int8, pg_catalog.text)');
    v_owner   pg_catalog.oid;
    v_script  pg_catalog.aclitem[];  -- the replacement's, as this script made it
    v_acl     pg_catalog.aclitem[];  -- the old one's, the operator's changes in it
    v_item    record;
BEGIN
    SELECT p.proowner, p.proacl INTO v_owner, v_script FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) v_new;
    SELECT p.proacl INTO v_acl FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) v_old;
    -- (nothing to carry where nobody changed them)
    IF (v_acl IS NULL AND v_script IS NULL OR v_acl OPERATOR(pg_catalog.=) v_script) IS NOT TRUE THEN
        v_acl := coalesce(v_acl, pg_catalog.acldefault('f', v_owner));
        FOR v_item IN SELECT DISTINCT a.grantee FROM pg_catalog.aclexplode(coalesce(v_script, pg_catalog.acldefault('f', v_owner))) AS a
                       WHERE a.grantee OPERATOR(pg_catalog.<>) v_owner LOOP
            EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM %s', v_new::pg_catalog.regprocedure,
                                      CASE WHEN v_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE v_item.grantee::pg_catalog.regrole::pg_catalog.text END);
        END LOOP;
        FOR v_item IN SELECT a.grantee, pg_catalog.bool_or(a.is_grantable) AS grantable FROM pg_catalog.aclexplode(v_acl) AS a
                       WHERE a.grantee OPERATOR(pg_catalog.<>) v_owner AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
                       GROUP BY a.grantee LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', v_new::pg_catalog.regprocedure,
                                      CASE WHEN v_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE v_item.grantee::pg_catalog.regrole::pg_catalog.text END,
                                      CASE WHEN v_item.grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        -- (the GRANTs of an extension's script are its initial privileges:
        -- back to the script's own)
        IF v_script IS NULL THEN
            DELETE FROM pg_catalog.pg_init_privs AS i
             WHERE i.objoid OPERATOR(pg_catalog.=) v_new AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
        ELSE
            UPDATE pg_catalog.pg_init_privs AS i SET initprivs = v_script
             WHERE i.objoid OPERATOR(pg_catalog.=) v_new AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
        END IF;
    END IF;
    DROP FUNCTION @extschema@.keep_alive_0_5_0(pg_catalog.int8, pg_catalog.text);
END
$carry$;

CREATE OR REPLACE FUNCTION @extschema@.release(name text, owner text, epoch bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_now     timestamptz;
    v_owner   text;
    v_epoch   bigint;
    v_expires timestamptz;
    v_session bigint;
    v_status  text;
BEGIN
    LOOP
        -- The write first, re-checking the lease in its WHERE, in a
        -- subtransaction, so that a call that is not ok keeps no row lock
        -- (a concurrent change makes the UPDATE lock the row's newest
        -- version before re-checking it).
        BEGIN
            -- The epoch advances now, so that the old token is stale at once.
            -- A name held on its own by its own expiry: a statement without
            -- the read of sessions, which costs every call that has one in
            -- its plan (18,000 instructions, the session's index opened and
            -- locked); a name of a session (its epoch's grant fixed
            -- session_id) by its session's expiry, in a second statement.
            UPDATE @extschema@.leases AS l
               SET owner = NULL, expires_at = NULL, epoch = l.epoch + 1
             WHERE l.name = release.name AND l.owner = release.owner AND l.epoch = release.epoch
               AND l.session_id IS NULL AND l.expires_at > clock_timestamp();
            -- (FOUND costs less here than a RETURNING ... INTO STRICT; one
            -- test of it on the common path)
            IF NOT FOUND THEN
                -- (o: the row as it was, for its session)
                UPDATE @extschema@.leases AS l
                   SET owner = NULL, expires_at = NULL, epoch = l.epoch + 1, session_id = NULL
                  FROM @extschema@.leases AS o
                 WHERE l.name = release.name AND l.owner = release.owner AND l.epoch = release.epoch
                   AND l.session_id IS NOT NULL AND (CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id), l.expires_at) END) > clock_timestamp() AND o.name = l.name
                RETURNING o.session_id INTO v_session;
                IF NOT FOUND THEN
                    RAISE EXCEPTION USING ERRCODE = 'LS001';
                END IF;
                -- counted where the session's keep-alive reads it
                UPDATE @extschema@.sessions AS s SET released = s.released + 1 WHERE s.id = v_session;
            END IF;
            IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
               NOT IN ('onon', 'ononon', 'remote_applyon', 'offsession', 'onsession', 'localsession', 'remote_writesession', 'remote_applysession') THEN
                IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
                   IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN
                    PERFORM set_config('synchronous_commit', 'on', true);
                ELSE
                    PERFORM @extschema@.durable();
                END IF;
            END IF;
            -- Someone watches the name: tell them (see watch()).
            IF NOT pg_try_advisory_xact_lock(1818583411, hashtext((release.name) COLLATE "C")) THEN
                PERFORM pg_notify('lease_released', release.name);
            END IF;
            RETURN 'ok';
        EXCEPTION WHEN SQLSTATE 'LS001' THEN
            NULL;  -- not released: no lock is kept
        END;
        -- Not released. The arguments are checked here, not first: only
        -- good ones can match a row (the functions store no other name,
        -- owner or epoch), so bad ones changed nothing above, and a
        -- release that succeeds skips the check (11,000 instructions; good
        -- arguments pass in one expression, the checks one by one, which
        -- say what is wrong, run only when it is not true).
        IF (octet_length(release.name) <@ int4range(1, 1024, '[]')
           AND octet_length(release.owner) <@ int4range(1, 1024, '[]')
           AND release.epoch >= 1) IS NOT TRUE THEN
            IF release.name IS NULL OR release.name = '' OR octet_length(release.name) > 1024 THEN
                RAISE EXCEPTION 'name must be a non-empty string of at most 1024 bytes'
                    USING ERRCODE = '22023',
                          DETAIL = CASE WHEN release.name IS NULL THEN 'name is NULL.'
                                        WHEN release.name = '' THEN 'name is empty.'
                                        ELSE format('name is %s bytes long.', octet_length(release.name)) END;
            END IF;
            IF release.owner IS NULL OR release.owner = '' OR octet_length(release.owner) > 1024 THEN
                RAISE EXCEPTION 'owner must be a non-empty string of at most 1024 bytes'
                    USING ERRCODE = '22023',
                          DETAIL = CASE WHEN release.owner IS NULL THEN 'owner is NULL.'
                                        WHEN release.owner = '' THEN 'owner is empty.'
                                        ELSE format('owner is %s bytes long.', octet_length(release.owner)) END;
            END IF;
            IF release.epoch IS NULL OR release.epoch < 1 THEN
                RAISE EXCEPTION 'epoch must be a positive number'
                    USING ERRCODE = '22023',
                          DETAIL = format('epoch is %s.', coalesce(release.epoch::text, 'NULL')),
                          HINT = 'Pass the epoch that lease.acquire returned.';
            END IF;
        END IF;
        -- A plain read says why.
        v_now := clock_timestamp();
        SELECT l.owner, l.epoch, CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id), l.expires_at) END, l.session_id
          INTO v_owner, v_epoch, v_expires, v_session
          FROM @extschema@.leases AS l
         WHERE l.name = release.name;
        v_status := CASE WHEN v_owner IS NULL OR v_owner <> release.owner THEN 'not_owner'
                   WHEN v_epoch <> release.epoch THEN 'epoch_mismatch'
                   WHEN v_expires <= v_now THEN 'lapsed'
                   ELSE 'ok' END;
        EXIT WHEN v_status <> 'ok';  -- ok: it changed between the two; again
    END LOOP;
    RETURN v_status;
END
$function$;

-- A session's own lease.synchronous_commit raises the database's floor
-- session.
CREATE OR REPLACE FUNCTION @extschema@.durable()
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_db    text := @extschema@.database_floor();
    v_floor text := coalesce(nullif(current_setting('lease.synchronous_commit', true), ''), 'on');
    v_now   text;
BEGIN
    IF v_db = 'session' THEN
        -- Lowered for the database by set_floor(); a session that asks
        -- for on or remote_apply itself still has it (0.5.1).
        IF v_floor NOT IN ('on', 'remote_apply') OR coalesce(current_setting('lease.synchronous_commit', true), '') = '' THEN
            RETURN;
        END IF;
    ELSIF v_floor = 'session' THEN
        -- Lowered by a session only where the database's or the session
        -- role's setting says so (ALTER ROLE / ALTER DATABASE ... SET: for a
        -- setting of an extension without a library only a superuser may
        -- write one; the installer has lease.set_floor()). A session that
        -- sets it itself keeps the floor.
        IF EXISTS (SELECT FROM pg_db_role_setting AS s
                    WHERE s.setdatabase IN (0, (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()))
                      AND s.setrole IN (0, (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = session_user))
                      AND s.setconfig @> ARRAY['lease.synchronous_commit=session']) THEN
            RETURN;
        END IF;
        v_floor := 'on';
    ELSIF v_floor NOT IN ('on', 'remote_apply') THEN
        RAISE EXCEPTION 'lease.synchronous_commit must be on, remote_apply or session'
            USING ERRCODE = '22023', DETAIL = format('lease.synchronous_commit is %L.', v_floor);
    END IF;
    IF v_db = 'remote_apply' THEN
        v_floor := 'remote_apply';
    END IF;
    v_now := current_setting('synchronous_commit');
    -- off, local and remote_write are below on; on is below remote_apply.
    -- SET LOCAL's effect: this transaction only (a function's SET clause
    -- restores only the settings it names, not this one).
    IF v_now IN ('off', 'local', 'remote_write') OR (v_floor = 'remote_apply' AND v_now = 'on') THEN
        PERFORM set_config('synchronous_commit', v_floor, true);
    END IF;
END
$function$;

-- purge() waits for a keep-alive in flight before it judges a session's
-- names.
CREATE OR REPLACE FUNCTION @extschema@.purge(grace interval DEFAULT interval '0')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_cutoff  timestamptz;
    v_deleted bigint;
    v_max     bigint;
BEGIN
    IF purge.grace IS NULL OR NOT isfinite(purge.grace) THEN
        RAISE EXCEPTION 'grace must be a finite interval'
            USING ERRCODE = '22023', DETAIL = format('grace is %s.', coalesce(purge.grace::text, 'NULL'));
    END IF;
    IF date_part('month', purge.grace) <> 0 OR date_part('year', purge.grace) <> 0 THEN
        RAISE EXCEPTION 'grace must not have a month or year part'
            USING ERRCODE = '22023',
                  DETAIL = format('grace is %s: a month has no fixed length in seconds.', purge.grace),
                  HINT = 'Give the grace in days, hours, minutes or seconds.';
    END IF;
    IF purge.grace < interval '0' THEN
        RAISE EXCEPTION 'grace must not be negative'
            USING ERRCODE = '22023', DETAIL = format('grace is %s.', purge.grace);
    END IF;
    -- now - grace as elapsed time, like now + ttl
    v_cutoff := ((clock_timestamp() AT TIME ZONE 'UTC') - purge.grace) AT TIME ZONE 'UTC';
    -- Rows another transaction has locked (a writer, a guard) are skipped,
    -- never waited for; the rows taken are re-checked on their newest
    -- version.
    WITH doomed AS (
        SELECT l.name
          FROM @extschema@.leases AS l
         WHERE l.owner IS NULL
            -- a session's name lapsed by the session's expiry read again
            -- locked, so that a keep-alive in flight is waited for and
            -- its renewal seen (0.5.1: 0.5.0 deleted the name of a
            -- session whose keep-alive then committed ok)
            OR CASE WHEN (CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id), l.expires_at) END) > v_cutoff THEN false
                    WHEN l.session_id IS NULL THEN true
                    ELSE (CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id FOR SHARE), l.expires_at) END) <= v_cutoff END
           FOR UPDATE OF l SKIP LOCKED
    ), deleted AS (
        DELETE FROM @extschema@.leases AS l
         USING doomed AS d
         WHERE l.name = d.name
        RETURNING l.epoch
    )
    SELECT count(*), max(deleted.epoch) INTO v_deleted, v_max FROM deleted;
    -- Sessions lapsed as long go too (a name left under one reads as
    -- lapsed by its own expiry, which is never later).
    DELETE FROM @extschema@.sessions AS s
     WHERE s.id IN (SELECT d.id FROM @extschema@.sessions AS d WHERE d.expires_at <= v_cutoff FOR UPDATE SKIP LOCKED);
    IF v_max IS NOT NULL THEN
        INSERT INTO @extschema@.purge_mark AS m (id, epoch) VALUES (true, v_max)
        ON CONFLICT ON CONSTRAINT purge_mark_pkey DO UPDATE SET epoch = greatest(m.epoch, excluded.epoch);
        IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
           NOT IN ('onon', 'ononon', 'remote_applyon', 'offsession', 'onsession', 'localsession', 'remote_writesession', 'remote_applysession') THEN
            IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
               IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN
                PERFORM set_config('synchronous_commit', 'on', true);
            ELSE
                PERFORM @extschema@.durable();
            END IF;
        END IF;
    END IF;
    RETURN v_deleted;
END
$function$;

-- session_acquire() moves only the grant acquire() answered, and never
-- from another session.
ALTER FUNCTION @extschema@.session_acquire(bigint, text, text, interval) RENAME TO session_acquire_0_5_0;
CREATE FUNCTION @extschema@.session_acquire(session bigint, owner text, name text, max_wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.acquire_result
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
<<session_acquire>>  -- (its answer, session_acquire.epoch, beside its arguments)
DECLARE
    acquired   boolean;
    epoch      bigint;
    expires_at timestamptz;
    v_ttl   interval;
    v_other bigint;  -- the session another holding of the name is under
BEGIN
    -- The session lives, and stays while this transaction does (a
    -- close_session waits for it; a keep-alive does not).
    SELECT s.ttl INTO v_ttl FROM @extschema@.sessions AS s
     WHERE s.id = session_acquire.session AND s.owner = session_acquire.owner AND s.expires_at > clock_timestamp()
       FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the session of "%" is not alive', session_acquire.owner
            USING ERRCODE = '55000',
                  DETAIL = 'It lapsed, was closed, or is another owner''s.',
                  HINT = 'Open a new session with lease.open_session().';
    END IF;
    -- (not acquired in the grace: expires_at is the grace's end, as acquire's)
    SELECT a.acquired, a.epoch, a.expires_at INTO acquired, epoch, expires_at
      FROM @extschema@.acquire(session_acquire.name, session_acquire.owner, v_ttl, session_acquire.max_wait) AS a;
    IF acquired THEN
        -- Under the session from now on, its expiry the session's: the
        -- grant acquire() answered (its owner and epoch: a re-acquire
        -- takes no lock, and the name may have changed hands since), held
        -- on its own or under this session (0.5.1: 0.5.0 moved whatever
        -- row had the name, from another session too).
        UPDATE @extschema@.leases AS l
           SET session_id = session_acquire.session,
               expires_at = (SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = session_acquire.session)
         WHERE l.name = session_acquire.name AND l.owner = session_acquire.owner AND l.epoch = session_acquire.epoch
           AND (l.session_id IS NULL OR l.session_id = session_acquire.session)
        RETURNING l.expires_at INTO expires_at;
        IF NOT FOUND THEN
            SELECT l.session_id INTO v_other FROM @extschema@.leases AS l
             WHERE l.name = session_acquire.name AND l.owner = session_acquire.owner AND l.epoch = session_acquire.epoch;
            IF v_other IS NOT NULL THEN
                -- (no id: whoever gives an owner may open a session)
                RAISE EXCEPTION 'lease "%" is held by "%" under another session', session_acquire.name, session_acquire.owner
                    USING ERRCODE = '55000',
                          DETAIL = 'A name is held under one session at a time.',
                          HINT = 'Release it from that session first, or give each session an owner of its own.';
            END IF;
            -- it changed hands after acquire() read it: not acquired
            acquired := false;
            epoch := NULL;
            expires_at := NULL;
            RETURN NEXT ROW(acquired, epoch, expires_at);
            RETURN;
        END IF;
        -- durable, as the grant: a lost move would leave the name to its
        -- own expiry while its holder keeps the session alive
        IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
           NOT IN ('onon', 'ononon', 'remote_applyon', 'offsession', 'onsession', 'localsession', 'remote_writesession', 'remote_applysession') THEN
            IF current_setting('synchronous_commit') || @extschema@.database_floor() || coalesce(current_setting('lease.synchronous_commit', true), '')
               IN ('offon', 'localon', 'remote_writeon', 'offonon', 'localonon', 'remote_writeonon') THEN
                PERFORM set_config('synchronous_commit', 'on', true);
            ELSE
                PERFORM @extschema@.durable();
            END IF;
        END IF;
    ELSE
        epoch := NULL;
    END IF;
    RETURN NEXT ROW(acquired, epoch, expires_at);
END
$function$;

COMMENT ON FUNCTION @extschema@.session_acquire(bigint, text, text, interval) IS
    'session_acquire(session, owner, name, max_wait => NULL): acquire name as acquire() does, for the session''s owner, held under the session (while it lives); returns (acquired, epoch, expires_at: the session''s; not acquired, the grace''s end in a grace, else NULL).';

DO $carry$
DECLARE
    v_old     pg_catalog.oid := pg_catalog.to_regprocedure('@extschema@.session_acquire_0_5_0(pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.interval)');
    v_new     pg_catalog.oid := pg_catalog.to_regprocedure('@extschema@.session_acquire(pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.interval)');
    v_owner   pg_catalog.oid;
    v_script  pg_catalog.aclitem[];  -- the replacement's, as this script made it
    v_acl     pg_catalog.aclitem[];  -- the old one's, the operator's changes in it
    v_item    record;
BEGIN
    SELECT p.proowner, p.proacl INTO v_owner, v_script FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) v_new;
    SELECT p.proacl INTO v_acl FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) v_old;
    -- (nothing to carry where nobody changed them)
    IF (v_acl IS NULL AND v_script IS NULL OR v_acl OPERATOR(pg_catalog.=) v_script) IS NOT TRUE THEN
        v_acl := coalesce(v_acl, pg_catalog.acldefault('f', v_owner));
        FOR v_item IN SELECT DISTINCT a.grantee FROM pg_catalog.aclexplode(coalesce(v_script, pg_catalog.acldefault('f', v_owner))) AS a
                       WHERE a.grantee OPERATOR(pg_catalog.<>) v_owner LOOP
            EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM %s', v_new::pg_catalog.regprocedure,
                                      CASE WHEN v_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE v_item.grantee::pg_catalog.regrole::pg_catalog.text END);
        END LOOP;
        FOR v_item IN SELECT a.grantee, pg_catalog.bool_or(a.is_grantable) AS grantable FROM pg_catalog.aclexplode(v_acl) AS a
                       WHERE a.grantee OPERATOR(pg_catalog.<>) v_owner AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
                       GROUP BY a.grantee LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', v_new::pg_catalog.regprocedure,
                                      CASE WHEN v_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE v_item.grantee::pg_catalog.regrole::pg_catalog.text END,
                                      CASE WHEN v_item.grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        -- (the GRANTs of an extension's script are its initial privileges:
        -- back to the script's own)
        IF v_script IS NULL THEN
            DELETE FROM pg_catalog.pg_init_privs AS i
             WHERE i.objoid OPERATOR(pg_catalog.=) v_new AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
        ELSE
            UPDATE pg_catalog.pg_init_privs AS i SET initprivs = v_script
             WHERE i.objoid OPERATOR(pg_catalog.=) v_new AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
        END IF;
    END IF;
    DROP FUNCTION @extschema@.session_acquire_0_5_0(pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.interval);
END
$carry$;

-- inspect() answers one instant: an expiry that passed while it read is
-- read again.
CREATE OR REPLACE FUNCTION @extschema@.inspect(name text)
RETURNS TABLE (held boolean, owner text, epoch bigint, expires_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_before timestamptz;
BEGIN

    IF inspect.name IS NULL OR inspect.name = '' OR octet_length(inspect.name) > 1024 THEN
        RAISE EXCEPTION 'name must be a non-empty string of at most 1024 bytes'
            USING ERRCODE = '22023',
                  DETAIL = CASE WHEN inspect.name IS NULL THEN 'name is NULL.'
                                WHEN inspect.name = '' THEN 'name is empty.'
                                ELSE format('name is %s bytes long.', octet_length(inspect.name)) END;
    END IF;
    -- One instant's answer (at READ COMMITTED, where the read takes its
    -- own snapshot): the row as of the read's snapshot, judged by a clock
    -- read before the read and one after it. An expiry that falls between
    -- the two (it passed during the read, or the backend was paused in
    -- it) is neither surely held nor surely lapsed at the snapshot: read
    -- again (0.5.1; under an older snapshot the second look ends it).
    LOOP
        v_before := clock_timestamp();
        SELECT l.owner, l.epoch, CASE WHEN l.session_id IS NULL THEN l.expires_at
                 ELSE coalesce((SELECT s.expires_at FROM @extschema@.sessions AS s WHERE s.id = l.session_id), l.expires_at) END INTO owner, epoch, expires_at
          FROM @extschema@.leases AS l
         WHERE l.name = inspect.name;
        held := FOUND AND owner IS NOT NULL AND expires_at > clock_timestamp();
        EXIT WHEN held OR (expires_at > v_before) IS NOT TRUE;
    END LOOP;
    RETURN NEXT;
END
$function$;

-- The installer's own pg_dump reads the state tables (0.5.1): the
-- extension's owner, looked up (the role running this update may be a
-- superuser's). Writing them, for its own restore, is a fresh install's
-- until its first grant: this database has granted, or may be granting
-- while this update runs.
DO $do$
DECLARE
    v_installer name := (SELECT r.rolname FROM pg_catalog.pg_depend AS d
              JOIN pg_catalog.pg_extension AS e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
              JOIN pg_catalog.pg_roles AS r ON r.oid OPERATOR(pg_catalog.=) e.extowner
             WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
               AND d.objid OPERATOR(pg_catalog.=) '@extschema@.leases'::pg_catalog.regclass
               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
               AND d.deptype OPERATOR(pg_catalog.=) 'e'
               AND e.extowner OPERATOR(pg_catalog.<>) (SELECT c.relowner FROM pg_catalog.pg_class AS c
                                                        WHERE c.oid OPERATOR(pg_catalog.=) '@extschema@.leases'::pg_catalog.regclass));
BEGIN
    IF v_installer IS NOT NULL THEN
        EXECUTE pg_catalog.format('GRANT SELECT ON TABLE @extschema@.leases, @extschema@.purge_mark, @extschema@.eras, '
                                  '@extschema@.limits, @extschema@.sessions TO %I', v_installer);
    END IF;
END
$do$;
