# A stand-in for the registry's postgres:15, for engines that cannot pull it
# (scripts/compose-check.sh builds it as postgres:15 only when the pull fails). Debian 12's
# postgresql-15, with the part of the official image's contract compose.yaml and the
# documented backup commands use: POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB make the
# cluster on first start (local connections trusted, network ones by scram-sha-256), PGDATA
# is /var/lib/postgresql/data (a volume), and postgres, pg_isready, pg_dump, pg_restore,
# createdb and dropdb are on PATH. No init scripts, no other variables.
ARG BASE=jaxjudge-base:bookworm
FROM ${BASE}
LABEL org.jaxjudge.stand-in="postgres:15"
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d \
 && mkdir -p /etc/postgresql-common/createcluster.d \
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/stand-in.conf \
 && apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
 && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql \
 && chmod 0700 /var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:${PATH} \
    PGDATA=/var/lib/postgresql/data
VOLUME /var/lib/postgresql/data
USER postgres
STOPSIGNAL SIGINT
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
