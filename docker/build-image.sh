#!/usr/bin/env bash
# Build the sandbox image (make sandbox-image).
#
#   IMAGE       tag to build                      (default: jaxjudge-sandbox:latest)
#   BASE_IMAGE  a Python 3.11 base to pull        (default: python:3.11-slim-bookworm)
#   MIRROR      Debian mirror for debootstrap     (default: from /etc/apt, else deb.debian.org)
#   SECCOMP_OUT the zygote's seccomp profile      (default: var/zygote-seccomp.json)
#   DOCKER_DEFAULT_SECCOMP  the engine's default seccomp profile (JSON); default: taken
#               from Debian's golang-github-docker-docker-dev of the engine's version
#
# Where the base cannot be pulled (no registry), docker/base-image.sh makes one with
# debootstrap (Debian 12 minbase + python3) and `docker import`, once. The host's pip settings (CA
# bundle at $PIP_CERT, $PIP_INDEX_URL, $PIP_EXTRA_INDEX_URL) reach only the build stage.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-jaxjudge-sandbox:latest}
BASE_IMAGE=${BASE_IMAGE:-python:3.11-slim-bookworm}
PYTHON=${PYTHON:-.venv/bin/python}
HARNESS_VERSION=$(sed -n 's/^HARNESS_VERSION = "\(.*\)"$/\1/p' judge/harness/__init__.py)
HARNESS_DIGEST=$("$PYTHON" -m judge.sandbox.image)
[ -n "$HARNESS_VERSION" ] || { echo "build-image: no HARNESS_VERSION in judge/harness/__init__.py" >&2; exit 1; }

docker info >/dev/null 2>&1 || { echo "build-image: no Docker engine answers (see docs/security.md)" >&2; exit 1; }

base=$BASE_IMAGE
if ! docker image inspect "$base" >/dev/null 2>&1 && ! docker pull -q "$base" >/dev/null 2>&1; then
    echo "build-image: $base cannot be pulled (no registry); using the debootstrapped base" >&2
    base=$(docker/base-image.sh)
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp docker/sandbox.Dockerfile "$ctx/Dockerfile"
cp docker/sandbox-requirements.txt "$ctx/"
mkdir -p "$ctx/src/judge" "$ctx/pip"
cp judge/__init__.py "$ctx/src/judge/"
cp -r judge/harness "$ctx/src/judge/harness"
find "$ctx/src" -name __pycache__ -prune -exec rm -rf {} +
cert=${PIP_CERT:-$(pip config get global.cert 2>/dev/null || true)}
[ -n "$cert" ] && [ -s "$cert" ] && cp "$cert" "$ctx/pip/ca.pem"

echo "build-image: building $IMAGE from $base (harness $HARNESS_VERSION, $HARNESS_DIGEST)"
docker build --network host -q \
    --build-arg BASE_IMAGE="$base" \
    --build-arg HARNESS_VERSION="$HARNESS_VERSION" \
    --build-arg HARNESS_DIGEST="$HARNESS_DIGEST" \
    --build-arg PIP_INDEX_URL="${PIP_INDEX_URL:-https://pypi.org/simple}" \
    --build-arg PIP_EXTRA_INDEX_URL="$(printf '%s' "${PIP_EXTRA_INDEX_URL:-}" | tr ' ' '\n' | grep -E '^https?://' | tr '\n' ' ' || true)" \
    -t "$IMAGE" "$ctx" >/dev/null
docker image prune -f --filter label=org.jaxjudge.stage=build >/dev/null 2>&1 || true
echo "build-image: $IMAGE ready"

# The zygote's seccomp profile: the engine's default plus unshare and mount
# (judge/sandbox/seccomp.py). The default comes from the engine's own source package.
SECCOMP_OUT=${SECCOMP_OUT:-var/zygote-seccomp.json}
default=${DOCKER_DEFAULT_SECCOMP:-}
if [ -z "$default" ]; then
    version=$(dpkg-query -W -f '${source:Version}' docker.io 2>/dev/null || true)
    [ -n "$version" ] || { echo "build-image: the engine is not Debian's docker.io; set DOCKER_DEFAULT_SECCOMP to its default seccomp profile" >&2; exit 1; }
    pkg=$(mktemp -d)
    trap 'rm -rf "$ctx" "$pkg"' EXIT
    (cd "$pkg" && apt-get download -q "golang-github-docker-docker-dev=$version" >/dev/null 2>&1) \
        || { echo "build-image: could not download golang-github-docker-docker-dev=$version (the engine's default seccomp profile)" >&2; exit 1; }
    dpkg-deb -x "$pkg"/*.deb "$pkg/x"
    default=$pkg/x/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json
fi
mkdir -p "$(dirname "$SECCOMP_OUT")"
"$PYTHON" -m judge.sandbox.seccomp "$default" > "$SECCOMP_OUT.tmp" && mv "$SECCOMP_OUT.tmp" "$SECCOMP_OUT"
echo "build-image: the zygote's seccomp profile is in $SECCOMP_OUT"
