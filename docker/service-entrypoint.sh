#!/bin/sh
# Entrypoint of the jaxjudge service image (docker/service.Dockerfile).
#
# 1. Never run the service as root. The image's user is jaxjudge (uid 10100). A container
#    started as root (compose starts the worker and sandbox-image so) is dropped to 10100
#    here, with one supplementary group: the group that owns the Docker socket named by
#    JAXJUDGE_DOCKER_HOST (default unix:///var/run/docker.sock), when it is mounted. So no
#    one has to know the host's docker gid. Being able to use that socket is still
#    root-equivalent on the host: see docker/README.md.
# 2. `build-sandbox-image`: build the sandbox image (JAXJUDGE_SANDBOX_IMAGE, default
#    jaxjudge-sandbox:latest) through that engine, from docker/sandbox.Dockerfile and the
#    harness of the judge installed in this image, with the labels the docker backend
#    checks; does nothing when the image already carries this judge's harness.
# 3. Anything else is run as given: gunicorn, celery, jaxjudge, ...
set -eu

UID_SERVICE=10100
GID_SERVICE=10100

if [ "$(id -u)" = 0 ]; then
    engine=${JAXJUDGE_DOCKER_HOST:-unix:///var/run/docker.sock}
    groups=--clear-groups
    case $engine in
        unix://*)
            socket=${engine#unix://}
            if [ -S "$socket" ]; then
                groups=--groups=$(stat -c %g "$socket")
            fi
            ;;
    esac
    export HOME=/home/jaxjudge USER=jaxjudge LOGNAME=jaxjudge
    exec setpriv --reuid="$UID_SERVICE" --regid="$GID_SERVICE" "$groups" \
        --inh-caps=-all --no-new-privs -- "$0" "$@"
fi

if [ "${1:-}" = build-sandbox-image ]; then
    shift
    exec python -I - "$@" <<'PY'
"""Build the sandbox image through the engine, as docker/build-image.sh does on a host:
the same Dockerfile, the same context layout (Dockerfile, sandbox-requirements.txt,
src/judge/{__init__.py,harness/}, pip/ca.pem), the same labels. The harness comes from
the judge installed here, so its digest is the one this image's workers check.

Environment: JAXJUDGE_SANDBOX_IMAGE, JAXJUDGE_DOCKER_HOST (as the workers read them);
SANDBOX_BASE_IMAGE (default python:3.11-slim-bookworm; jaxjudge-base:bookworm is used when
that cannot be pulled and exists); SANDBOX_BUILD_NETWORK (default host, as build-image.sh;
empty: the engine's default); SANDBOX_REBUILD=1 (build even when the labels match);
PIP_INDEX_URL, PIP_EXTRA_INDEX_URL (http(s) URLs only); a CA bundle for pip at
PIP_CA_FILE (default /run/secrets/pip_ca, where compose mounts $PIP_CERT), if not empty."""

import contextlib
import io
import os
import sys
import tarfile
from pathlib import Path

import docker
import docker.errors

import judge
from judge.harness import HARNESS_VERSION
from judge.sandbox.image import DIGEST_LABEL, VERSION_LABEL, harness_digest
from judge.settings import Settings

SHARE = Path("/opt/jaxjudge/share/sandbox")
LOCAL_BASE = "jaxjudge-base:bookworm"


def say(message: str) -> None:
    print(f"build-sandbox-image: {message}", flush=True)


def labels_of(api: docker.APIClient, image: str) -> dict[str, str]:
    try:
        return api.inspect_image(image)["Config"].get("Labels") or {}
    except docker.errors.ImageNotFound:
        return {}


def present(api: docker.APIClient, image: str) -> bool:
    try:
        api.inspect_image(image)
    except docker.errors.ImageNotFound:
        return False
    return True


def add(tar: tarfile.TarFile, name: str, data: bytes | None) -> None:
    info = tarfile.TarInfo(name)
    info.mtime = 0
    if data is None:
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
    else:
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))


def context(ca_pem: bytes) -> io.BytesIO:
    buffer = io.BytesIO()
    root = Path(judge.__file__).parent
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        add(tar, "Dockerfile", (SHARE / "sandbox.Dockerfile").read_bytes())
        add(tar, "sandbox-requirements.txt", (SHARE / "sandbox-requirements.txt").read_bytes())
        add(tar, "pip", None)
        if ca_pem.strip():
            add(tar, "pip/ca.pem", ca_pem)
        add(tar, "src", None)
        add(tar, "src/judge", None)
        add(tar, "src/judge/__init__.py", (root / "__init__.py").read_bytes())
        for path in sorted((root / "harness").rglob("*")):
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            name = "src/judge/" + path.relative_to(root).as_posix()
            add(tar, name, None if path.is_dir() else path.read_bytes())
    buffer.seek(0)
    return buffer


def main() -> int:
    settings = Settings()
    image = settings.sandbox_image
    version, digest = HARNESS_VERSION, harness_digest()
    api = docker.APIClient(base_url=settings.docker_host, timeout=3600)
    try:
        api.ping()
    except (docker.errors.DockerException, OSError) as exc:
        say(f"no Docker engine answers at {settings.docker_host}: {exc}")
        return 1

    found = labels_of(api, image)
    if (found.get(VERSION_LABEL), found.get(DIGEST_LABEL)) == (version, digest) \
            and not os.environ.get("SANDBOX_REBUILD"):
        say(f"{image} already carries harness {version} ({digest}); nothing to do")
        return 0

    base = os.environ.get("SANDBOX_BASE_IMAGE") or "python:3.11-slim-bookworm"
    if not present(api, base):
        try:
            api.pull(base)
        except docker.errors.DockerException as exc:
            say(f"cannot pull {base}: {str(exc).splitlines()[0][:200]}")
        if not present(api, base):
            if not present(api, LOCAL_BASE):
                say(f"no base image: neither {base} nor {LOCAL_BASE} is there; build the "
                    "sandbox image on the host with `make sandbox-image`")
                return 1
            base = LOCAL_BASE

    extra = " ".join(u for u in os.environ.get("PIP_EXTRA_INDEX_URL", "").split()
                     if u.startswith(("http://", "https://")))
    buildargs = {
        "BASE_IMAGE": base,
        "HARNESS_VERSION": version,
        "HARNESS_DIGEST": digest,
        "PIP_INDEX_URL": os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple",
        "PIP_EXTRA_INDEX_URL": extra,
    }
    network = os.environ.get("SANDBOX_BUILD_NETWORK", "host") or None
    say(f"building {image} from {base} (harness {version}, {digest})")
    failed = None
    ca_file = Path(os.environ.get("PIP_CA_FILE") or "/run/secrets/pip_ca")
    ca_pem = ca_file.read_bytes() if ca_file.is_file() else b""
    for chunk in api.build(fileobj=context(ca_pem),
                           custom_context=True, tag=image, buildargs=buildargs,
                           network_mode=network, rm=True, forcerm=True, decode=True):
        if "stream" in chunk:
            sys.stdout.write(chunk["stream"])
            sys.stdout.flush()
        if "error" in chunk:
            failed = chunk["error"]
    # The build stage held the pip settings (and a CA bundle): keep none of it around.
    with contextlib.suppress(docker.errors.DockerException):
        api.prune_images(filters={"label": "org.jaxjudge.stage=build", "dangling": True})
    if failed:
        say(f"build failed: {failed.strip()}")
        return 1
    built = labels_of(api, image)
    if (built.get(VERSION_LABEL), built.get(DIGEST_LABEL)) != (version, digest):
        say(f"{image} was built but does not carry harness {version} ({digest})")
        return 1
    say(f"{image} ready")
    return 0


sys.exit(main())
PY
fi

exec "$@"
