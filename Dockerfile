# syntax=docker/dockerfile:1
# Switchboard's image: the wheel is built and installed with its dependencies into a
# virtualenv in the builder stage; the runtime stage copies only that virtualenv.
# docs/deploy.md explains how to run it (compose.yaml runs two behind Caddy).

ARG PYTHON_IMAGE=python:3.12-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
RUN python -m venv /opt/switchboard
# Only what the wheel is built from (.dockerignore keeps the rest out of the context).
COPY pyproject.toml setup.py README.md requirements.lock ./
COPY alembic ./alembic
COPY app ./app
COPY connectors ./connectors
COPY storage ./storage
COPY websocket ./websocket
COPY wire ./wire
# The dependencies exactly as the runtime lock pins them (every file's hash checked), then
# the wheel without resolving anything again. setup.py copies alembic/ into the wheel
# (storage/migrations), so the installed package migrates from any directory.
RUN /opt/switchboard/bin/pip install --require-hashes -r requirements.lock \
    && /opt/switchboard/bin/pip wheel --no-deps --wheel-dir /wheels . \
    && /opt/switchboard/bin/pip install --no-deps /wheels/*.whl

FROM ${PYTHON_IMAGE} AS runtime
# tini is PID 1: it passes SIGTERM to switchboard (whose drain lets running turns
# finish, then closes sockets with 1001 so clients resume elsewhere) and reaps the
# children an MCP stdio server may leave behind.
# Not pinned to a version: Debian stable's package only ever gets fixes, and the exact
# version differs between architectures (0.19.0-1+b3 on amd64 today), so a pin would
# break the build somewhere.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/switchboard \
        --create-home --shell /usr/sbin/nologin switchboard
COPY --from=builder /opt/switchboard /opt/switchboard
COPY --chmod=0755 deploy/docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/opt/switchboard/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    SWITCHBOARD_HOST=0.0.0.0 \
    SWITCHBOARD_PORT=8000 \
    SWITCHBOARD_DATA_DIR=/var/lib/switchboard \
    SWITCHBOARD_DATABASE_URL=sqlite+aiosqlite:////var/lib/switchboard/switchboard.db
# Numeric, so a runtime that insists on non-root (runAsNonRoot) can check it.
USER 10001:10001
WORKDIR /var/lib/switchboard
VOLUME ["/var/lib/switchboard"]
EXPOSE 8000
# /readyz: 200 when the database answers (a Redis outage is "degraded", still 200).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as u; u.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('SWITCHBOARD_PORT', '8000'), timeout=4)"]
# The SIGTERM that `docker stop` sends reaches switchboard through tini; give the
# drain its SWITCHBOARD_SHUTDOWN_GRACE_SECONDS (10) plus closing time before SIGKILL:
# `docker stop -t 30` / compose's stop_grace_period.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--", "docker-entrypoint.sh"]
# `serve` migrates the database first (`--no-migrate` to skip), then serves.
CMD ["switchboard", "serve"]
