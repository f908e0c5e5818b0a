# The jaxjudge service image: the API (gunicorn), the Celery workers, the `jaxjudge` CLI
# (migrations, keys) and the problem packages in /srv/jaxjudge/problemsets. compose.yaml
# builds it; by hand, from the repository root:
#
#   docker build -f docker/service.Dockerfile -t jaxjudge-service:latest .
#
# Where no registry answers, build from the debootstrapped base that docker/build-image.sh
# makes (Debian 12 with python3 3.11 and python3-venv): --build-arg BASE=jaxjudge-base:bookworm
# (and --network host on an engine started by docker/engine.sh, which has no bridge).
#
# pip settings reach only the build stage, as with docker/build-image.sh: the build args
# PIP_INDEX_URL and PIP_EXTRA_INDEX_URL (http(s) URLs), and a CA bundle for a
# TLS-intercepting proxy, taken from the context when it is there:
#   mkdir -p build && cp "$PIP_CERT" build/pip-ca.pem     (build/ is gitignored)
# (a file, not a build arg: a whole system bundle is larger than one argument may be).
# The final stage declares and copies none of it: the bundle and the index URLs are not in
# its layers, its environment or its history.
#
# It runs as uid 10100, not as root and not as the sandbox's uid 10001: sandboxes run on the
# same host kernel without user namespaces, so a distinct uid keeps a process that escaped a
# sandbox from signalling or tracing the worker. A container started as root (the worker,
# for the Docker socket) is dropped to 10100 by the entrypoint; see docker/README.md.
ARG BASE=python:3.11-slim-bookworm

# -- build stage: the only place that sees the host's pip settings ---------------------
FROM ${BASE} AS build
# Its cached layers hold the CA bundle: `docker image prune --filter
# label=org.jaxjudge.stage=service-build` drops them (the final image never has it).
LABEL org.jaxjudge.stage=service-build
ARG PIP_INDEX_URL=https://pypi.org/simple
ARG PIP_EXTRA_INDEX_URL=
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_INDEX_URL=${PIP_INDEX_URL} \
    PIP_EXTRA_INDEX_URL=${PIP_EXTRA_INDEX_URL}
# build/pip-ca.pe[m]: optional (a pattern that matches nothing copies nothing, as long as
# another source of the same COPY exists).
COPY pyproject.toml build/pip-ca.pe[m] /tmp/pip/
RUN python3 -m venv /opt/jaxjudge
# The pinned dependencies first, so that a change to the code reuses this layer.
COPY pyproject.toml /tmp/project/pyproject.toml
RUN if [ -s /tmp/pip/pip-ca.pem ]; then export PIP_CERT=/tmp/pip/pip-ca.pem; fi \
 && /opt/jaxjudge/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("/tmp/project/pyproject.toml", "rb"))["project"]["dependencies"]))' \
        > /tmp/requirements.txt \
 && /opt/jaxjudge/bin/pip install -r /tmp/requirements.txt
# Then the project itself (no dev extras), as a regular, non-editable install.
COPY README.md /tmp/project/README.md
COPY judge/ /tmp/project/judge/
COPY service/ /tmp/project/service/
COPY app/ /tmp/project/app/
COPY api/ /tmp/project/api/
COPY web/ /tmp/project/web/
COPY lti/ /tmp/project/lti/
COPY workers/ /tmp/project/workers/
RUN if [ -s /tmp/pip/pip-ca.pem ]; then export PIP_CERT=/tmp/pip/pip-ca.pem; fi \
 && /opt/jaxjudge/bin/pip install --no-deps /tmp/project \
 && { /opt/jaxjudge/bin/pip uninstall --yes pip setuptools wheel >/dev/null 2>&1 || true; }
RUN /opt/jaxjudge/bin/python -m compileall -q /opt/jaxjudge/lib \
 && /opt/jaxjudge/bin/python -I -c 'import app, api, web, lti.views, workers, service, judge.sandbox.docker, gunicorn, celery, psycopg' \
 && /opt/jaxjudge/bin/jaxjudge --help >/dev/null

# -- final stage: the venv, the problems, the entrypoint; nothing of the build ---------
FROM ${BASE}
RUN groupadd --gid 10100 jaxjudge \
 && useradd --uid 10100 --gid 10100 --home-dir /home/jaxjudge --create-home \
        --shell /usr/sbin/nologin jaxjudge \
 && { find / -xdev -type f -perm /6000 -exec chmod a-s {} + 2>/dev/null || true; }
COPY --from=build /opt/jaxjudge /opt/jaxjudge
# What build-sandbox-image needs to build the sandbox image that matches this judge.
COPY docker/sandbox.Dockerfile docker/sandbox-requirements.txt /opt/jaxjudge/share/sandbox/
COPY problemsets/ /srv/jaxjudge/problemsets/
COPY docker/service-entrypoint.sh /usr/local/bin/jaxjudge-entrypoint
RUN chmod 0755 /usr/local/bin/jaxjudge-entrypoint
# XDG_RUNTIME_DIR: where gunicorn puts its control socket (else ~/.gunicorn, which a
# read-only root cannot hold); compose gives /tmp a tmpfs.
ENV PATH=/opt/jaxjudge/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LANG=C.UTF-8 \
    JAX_PLATFORMS=cpu \
    XDG_RUNTIME_DIR=/tmp \
    JAXJUDGE_PROBLEMS_DIR=/srv/jaxjudge/problemsets
LABEL org.jaxjudge.image="service"
WORKDIR /srv/jaxjudge
USER 10100:10100
EXPOSE 8000
ENTRYPOINT ["jaxjudge-entrypoint"]
CMD ["gunicorn", "--bind", "0.0.0.0:8000", "--worker-class", "gthread", "--workers", "2", \
     "--threads", "16", "--timeout", "120", "app:create_app()"]
