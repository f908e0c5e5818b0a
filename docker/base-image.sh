#!/usr/bin/env bash
# Make sure the engine has jaxjudge-base:bookworm: Debian 12 minbase with python3 (3.11)
# and python3-venv, made with debootstrap and `docker import` where no registry answers.
# The sandbox build (build-image.sh), the compose check's stand-in images
# (docker/stand-ins/) and the service image (SERVICE_BASE_IMAGE) build on it. Made once:
# an engine that has it keeps it. Prints the image's name.
#
#   MIRROR  Debian mirror for debootstrap (default: from /etc/apt, else deb.debian.org)
set -euo pipefail
LOCAL_BASE=jaxjudge-base:bookworm
if ! docker image inspect "$LOCAL_BASE" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null || { echo "base-image: no registry and no debootstrap (apt-get install debootstrap)" >&2; exit 1; }
    mirror=${MIRROR:-$(sed -n 's/^URIs: \(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
    mirror=${mirror:-http://deb.debian.org/debian}
    rootfs=$(mktemp -d)
    trap 'rm -rf "$rootfs"' EXIT
    echo "base-image: debootstrapping Debian 12 from $mirror (about 45 s)" >&2
    debootstrap --variant=minbase --include=python3,python3-venv bookworm "$rootfs" "$mirror" >/dev/null
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | docker import -c 'ENV LANG=C.UTF-8' - "$LOCAL_BASE" >/dev/null
fi
echo "$LOCAL_BASE"
