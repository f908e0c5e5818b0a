# A stand-in for the registry's redis:7, for engines that cannot pull it
# (scripts/compose-check.sh builds it as redis:7 only when the pull fails). Debian 12's
# redis-server (7.0), with what compose.yaml relies on from the official image: `redis-server`
# and `redis-cli` on PATH, runs as user redis in /data (a volume), and protected mode off
# (the official image compiles it off; the compose network is its boundary, and Redis is
# never published). Nothing else of the official image is imitated.
ARG BASE=jaxjudge-base:bookworm
FROM ${BASE}
LABEL org.jaxjudge.stand-in="redis:7"
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d \
 && apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null \
 && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \
 && printf '#!/bin/sh\nexec /usr/bin/redis-server "$@" --protected-mode no\n' > /usr/local/bin/redis-server \
 && chmod 0755 /usr/local/bin/redis-server \
 && mkdir -p /data && chown redis:redis /data
WORKDIR /data
VOLUME /data
USER redis
EXPOSE 6379
CMD ["redis-server"]
