#!/bin/sh
# The postgres stand-in's entrypoint (docker/stand-ins/postgres.Dockerfile): on an empty
# data folder, make the cluster as the official image does (superuser POSTGRES_USER with
# POSTGRES_PASSWORD, database POSTGRES_DB, local connections trusted, network connections
# by scram-sha-256, listening on every address), then run the command.
set -eu
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "postgres stand-in: POSTGRES_PASSWORD must be set" >&2
        exit 1
    fi
    pwfile=$(mktemp)
    printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
    pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
    if [ "$POSTGRES_DB" != postgres ]; then
        createdb -U "$POSTGRES_USER" "$POSTGRES_DB"
    fi
    pg_ctl -D "$PGDATA" -w -m fast stop >/dev/null
    echo "postgres stand-in: cluster made for $POSTGRES_USER, database $POSTGRES_DB"
fi
exec "$@"
