# Facts about pg_lease for the PGXS Makefile.
# Rendered by pglease-gen from templates/pglease.mk.tmpl; edit the model, not this file.
EXT_NAME = pg_lease
EXTVERSION = 0.5.1
EXTSCRIPTS = pg_lease--0.1.0.sql pg_lease--0.2.0.sql pg_lease--0.1.0--0.2.0.sql pg_lease--0.3.0.sql pg_lease--0.2.0--0.3.0.sql pg_lease--0.4.0.sql pg_lease--0.3.0--0.4.0.sql pg_lease--0.2.0--0.4.0.sql pg_lease--0.5.0.sql pg_lease--0.4.0--0.5.0.sql pg_lease--0.5.1.sql pg_lease--0.5.0--0.5.1.sql
EXTCONTROL = pg_lease.control
PG_MIN_MAJOR = 14
PG_MAX_MAJOR = 19
PG_MAJORS = 14 15 16 17 18 19
