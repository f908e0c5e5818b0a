#!/usr/bin/env bash
# Run compose.yaml for real and check it grades, scales to two workers and loses nothing
# (issue 25): images first, then scripts/compose_check.py drives the stack.
#
#   bash scripts/compose-check.sh [--batch N] [--keep] [--project NAME]
#   bash scripts/compose-check.sh --images-only   # the images only; prints COMPOSE=... and
#                                                 # the base images it chose (NAME=value)
#
# Images, each only when missing:
#   - the engine (docker/engine.sh) and a compose: `docker compose`, else `docker-compose`,
#     else Debian's docker-compose (1.29) is installed;
#   - redis:7, postgres:15 and caddy:2: pulled, or where no registry answers, stand-ins built from
#     docker/stand-ins/ on the debootstrapped Debian 12 base (docker/base-image.sh);
#   - the service image, built by compose from docker/service.Dockerfile (on
#     python:3.11-slim-bookworm, or that base where it cannot be pulled; the host's pip CA
#     bundle, $PIP_CERT, goes to build/pip-ca.pem as docker/README.md says);
#   - the sandbox image and the zygote's seccomp profile: `make sandbox-image` when
#     var/zygote-seccomp.json is missing (compose's sandbox-image service checks the image).
# The last line is `compose: N graded, W workers, L lost`; exit 0 only when all held.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf 'compose-check: %s (%s s)\n' "$1" "$SECONDS" >&2; }
images_only=
if [ "${1:-}" = --images-only ]; then images_only=1; shift; fi

bash docker/engine.sh >&2
if docker compose version >/dev/null 2>&1; then
    COMPOSE="docker compose"
elif command -v docker-compose >/dev/null; then
    COMPOSE=docker-compose
else
    step "installing Debian's docker-compose"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
    COMPOSE=docker-compose
fi
export COMPOSE

# An image the engine has or can pull; else the stand-in, built only over a missing name
# or an older stand-in (never over an image of the same name from elsewhere).
have_or_pull() { docker image inspect "$1" >/dev/null 2>&1 || docker pull -q "$1" >/dev/null 2>&1; }
stand_in() {
    local name=$1 file=$2 label
    if have_or_pull "$name"; then
        label=$(docker image inspect -f '{{index .Config.Labels "org.jaxjudge.stand-in"}}' "$name")
        [ -z "$label" ] && return 0
    fi
    step "no registry: building the stand-in $name from $file"
    docker build --network host -q --build-arg BASE="$(docker/base-image.sh)" \
        -t "$name" -f "$file" docker/stand-ins >/dev/null
}
stand_in redis:7 docker/stand-ins/redis.Dockerfile
stand_in postgres:15 docker/stand-ins/postgres.Dockerfile
stand_in caddy:2 docker/stand-ins/caddy.Dockerfile
if ! have_or_pull "${SERVICE_BASE_IMAGE:-python:3.11-slim-bookworm}"; then
    SERVICE_BASE_IMAGE=$(docker/base-image.sh)
    export SERVICE_BASE_IMAGE SANDBOX_BASE_IMAGE=${SANDBOX_BASE_IMAGE:-$SERVICE_BASE_IMAGE}
fi

[ -f var/zygote-seccomp.json ] || { step "make sandbox-image"; make sandbox-image >&2; }
cert=${PIP_CERT:-$(pip config get global.cert 2>/dev/null || true)}
if [ -n "$cert" ] && [ -s "$cert" ]; then
    mkdir -p build && cp "$cert" build/pip-ca.pem
fi
step "building the service image (compose build; cached layers when unchanged)"
JAXJUDGE_SECRET_KEY=build $COMPOSE -p "${COMPOSE_CHECK_PROJECT:-jaxjudgecheck}" \
    -f compose.yaml -f /dev/stdin build -q api >&2 <<'YAML'
services:
  api:
    build:
      network: host
YAML
# The service images this build replaced (untagged now) go; the tagged one stays.
docker image prune -f --filter label=org.jaxjudge.image=service >/dev/null 2>&1 || true
step "images ready"
if [ -n "$images_only" ]; then
    # What compose_check.py would inherit, as NAME=value lines for the caller.
    for name in COMPOSE SERVICE_BASE_IMAGE SANDBOX_BASE_IMAGE; do
        [ -n "${!name:-}" ] && printf '%s=%s\n' "$name" "${!name}"
    done
    exit 0
fi
exec python3 scripts/compose_check.py "$@"
