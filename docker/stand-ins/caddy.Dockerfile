# A stand-in for the registry's caddy:2, for engines that cannot pull it
# (scripts/compose-check.sh builds it as caddy:2 only when the pull fails). Debian 12's
# caddy (2.6), laid out as the official image is: the Caddyfile at /etc/caddy/Caddyfile,
# certificates and keys in /data, its own config in /config, running as root so that it
# can bind 80 and 443.
ARG BASE=jaxjudge-base:bookworm
FROM ${BASE}
LABEL org.jaxjudge.stand-in="caddy:2"
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d \
 && apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends caddy ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \
 && mkdir -p /data /config /etc/caddy
ENV XDG_DATA_HOME=/data XDG_CONFIG_HOME=/config
VOLUME /data /config
EXPOSE 80 443
WORKDIR /srv
CMD ["caddy", "run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"]
