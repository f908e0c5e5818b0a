# The jaxjudge sandbox: Python with pinned jax, jaxlib, flax, optax and orbax-checkpoint,
# the harness baked in, a non-root user, no compilers. Build it with `make sandbox-image`
# (docker/build-image.sh), which prepares the context and picks the base:
# python:3.11-slim-bookworm where a registry answers, a debootstrapped Debian 12 otherwise.
ARG BASE_IMAGE=python:3.11-slim-bookworm

# -- build stage: the only place that sees the host's pip settings --------------------
FROM ${BASE_IMAGE} AS build
LABEL org.jaxjudge.stage=build
ARG PIP_INDEX_URL=https://pypi.org/simple
ARG PIP_EXTRA_INDEX_URL=
COPY pip/ /tmp/pip/
COPY sandbox-requirements.txt /tmp/sandbox-requirements.txt
RUN python3 -m venv /opt/jaxjudge \
 && if [ -s /tmp/pip/ca.pem ]; then export PIP_CERT=/tmp/pip/ca.pem; fi \
 && PIP_INDEX_URL="${PIP_INDEX_URL}" PIP_EXTRA_INDEX_URL="${PIP_EXTRA_INDEX_URL}" \
    /opt/jaxjudge/bin/pip install --no-cache-dir --disable-pip-version-check \
        -r /tmp/sandbox-requirements.txt \
 && /opt/jaxjudge/bin/pip uninstall --yes pip setuptools wheel >/dev/null 2>&1 || true
COPY src/ /opt/jaxjudge/src/
RUN purelib="$(/opt/jaxjudge/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
 && echo /opt/jaxjudge/src > "${purelib}/jaxjudge.pth" \
 && /opt/jaxjudge/bin/python -m compileall -q /opt/jaxjudge/src \
 && /opt/jaxjudge/bin/python -I -c 'import judge.harness, jax, flax.nnx'

# -- final stage: the venv and the harness, nothing of the build ----------------------
FROM ${BASE_IMAGE}
ARG HARNESS_VERSION
ARG HARNESS_DIGEST
COPY --from=build /opt/jaxjudge /opt/jaxjudge
# No setuid or setgid programs; nothing a submission could use to change user.
RUN find / -xdev -type f -perm /6000 -exec chmod a-s {} + 2>/dev/null || true
ENV XLA_FLAGS=--xla_force_host_platform_device_count=8 \
    JAX_PLATFORMS=cpu \
    PYTHONDONTWRITEBYTECODE=1
LABEL org.jaxjudge.harness-version="${HARNESS_VERSION}" \
      org.jaxjudge.harness-digest="${HARNESS_DIGEST}" \
      org.jaxjudge.image="sandbox"
WORKDIR /tmp
USER 10001:10001
ENTRYPOINT ["/opt/jaxjudge/bin/python", "-I", "-B", "-X", "utf8", "-m", "judge.harness"]
