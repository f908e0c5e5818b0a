#!/usr/bin/env bash
# Make sure a Docker engine answers: install Debian's docker.io (and debootstrap, for
# building the sandbox base without a registry) when missing, and start
# `dockerd --bridge=none --iptables=false` when no engine runs. Sandboxes use
# --network none, so the engine needs no bridge and creates no private network.
set -euo pipefail
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
    echo "engine: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if docker info >/dev/null 2>&1; then
    exit 0
fi
log=${DOCKERD_LOG:-/tmp/jaxjudge-dockerd.log}
echo "engine: starting dockerd (log: $log)"
nohup dockerd --bridge=none --iptables=false >"$log" 2>&1 &
for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && exit 0
    sleep 0.5
done
echo "engine: dockerd did not answer within 30 s; see $log" >&2
tail -20 "$log" >&2
exit 1
