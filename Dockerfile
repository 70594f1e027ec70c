# The tool's own image: kafka-reassign (target "cli", the default) and, optionally, with PySpark for
# `generate --engine spark` (target "spark"; its base needs a Java 17+ runtime too).
#
#   docker build --network host -t kafka-reassign .                      (pip gets the dependencies)
#   docker run --rm --network host -e KAFKA_REASSIGN_ZOOKEEPER=127.0.0.1:2181/kafka \
#       -v "$PWD:/work" -w /work kafka-reassign generate ...
#
# Offline builds: wheels in docker/wheels/ (scripts/docker fills it with `pip wheel .` on the host) are
# installed with --no-index, so the build downloads nothing; BASE is then an image with python3 >= 3.11
# and its venv module (scripts/docker uses the Debian base it bootstraps).
ARG BASE=python:3.11-slim

FROM ${BASE} AS cli
COPY pyproject.toml README.md /src/
COPY reassign_cli /src/reassign_cli
COPY docker/wheels /wheels
RUN set -e; python3 -m venv /opt/venv; \
    if ls /wheels/reassign_cli-*.whl >/dev/null 2>&1; then \
      /opt/venv/bin/pip install --no-cache-dir --no-index --find-links /wheels reassign_cli; \
    else \
      /opt/venv/bin/pip install --no-cache-dir /src; \
    fi; \
    /opt/venv/bin/kafka-reassign --version
ENV PATH=/opt/venv/bin:$PATH
ENTRYPOINT ["kafka-reassign"]

FROM cli AS spark
RUN set -e; \
    if ls /wheels/pyspark-*.whl >/dev/null 2>&1; then \
      /opt/venv/bin/pip install --no-cache-dir --no-index --find-links /wheels "reassign_cli[spark]"; \
    else \
      /opt/venv/bin/pip install --no-cache-dir "/src[spark]"; \
    fi
