# syntax=docker/dockerfile:1
# The one dihera image: `dihera controller` and `dihera server` (the chart passes the sub-command as args).
# Build: docker build -t <registry>/dihera:0.1.0 .
# The local control plane builds it with buildah and a Debian base (PYTHON_IMAGE): docs/local-cluster.md.

ARG PYTHON_IMAGE=python:3.11-slim

# --- builder: a wheel of dihera and wheels of its dependencies ------------------------------------------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY dihera ./dihera
RUN python -m pip wheel --wheel-dir /wheels ".[operator]"

# --- runtime: the wheels installed into a venv, run as a non-root user ------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PATH=/opt/dihera/bin:$PATH
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    python -m venv /opt/dihera \
    && /opt/dihera/bin/pip install --no-index --find-links /wheels "dihera[operator]" \
    && groupadd --system --gid 65532 dihera \
    && useradd --system --uid 65532 --gid 65532 --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin dihera
# Numeric user, so Kubernetes can verify runAsNonRoot.
USER 65532:65532
WORKDIR /tmp
EXPOSE 8080 8081
ENTRYPOINT ["dihera"]
CMD ["--help"]
