# The tool's own image: kafka-reassign (target "cli", the default) and, optionally, with PySpark for
# `generate --engine spark` (target "spark"; its base needs a Java 17+ runtime too).
#
#   docker build --network host -t kafka-reassign .                      (pip gets the dependencies)
#   docker run --rm --network host -e KAFKA_REASSIGN_ZOOKEEPER=127.0.0.1:2181/kafka \
#       -v "$PWD:/work" -w /work kafka-reassign generate ...
#   docker build --network host --target spark -t kafka-reassign:spark .   (+ pyspark, pandas, pyarrow)
#
# Offline builds: wheels in docker/wheels/ (and, for "spark", the dependencies of the [spark] extra in
# docker/wheels-spark/; `scripts/docker images [--spark]` fills them with `pip wheel` on the host, at
# the versions of its venv, listed in constraints.txt there) are installed with --no-index, so the
# build downloads nothing; BASE is then an image with python3 >= 3.11 and its venv module
# (scripts/docker uses the Debian base it bootstraps).
ARG BASE=python:3.11-slim

FROM ${BASE} AS cli
COPY pyproject.toml README.md /src/
COPY reassign_cli /src/reassign_cli
COPY docker/wheels /wheels
RUN set -e; python3 -m venv /opt/venv; \
    if ls /wheels/reassign_cli-*.whl >/dev/null 2>&1; then \
      c=; if [ -f /wheels/constraints.txt ]; then c="-c /wheels/constraints.txt"; fi; \
      /opt/venv/bin/pip install --no-cache-dir --no-index --find-links /wheels $c reassign_cli; \
    else \
      /opt/venv/bin/pip install --no-cache-dir /src; \
    fi; \
    /opt/venv/bin/kafka-reassign --version
ENV PATH=/opt/venv/bin:$PATH
ENTRYPOINT ["kafka-reassign"]

# The [spark] extra's dependencies (pyspark's wheel alone is ~0.4 GB) in a venv of their own stage,
# which does not change with the project's code: its layer is built once and cached; the wheels stay
# out of the image.
FROM ${BASE} AS spark-deps
COPY docker/wheels-spark /wheels-spark
RUN set -e; python3 -m venv /opt/venv; \
    if ls /wheels-spark/pyspark-*.whl >/dev/null 2>&1; then \
      /opt/venv/bin/pip install --no-cache-dir --no-index /wheels-spark/*.whl; \
    else \
      /opt/venv/bin/pip install --no-cache-dir "pyspark>=4.0,<5" "pandas>=2.2,<3" "pyarrow>=18"; \
    fi

FROM ${BASE} AS spark
COPY --from=spark-deps /opt/venv /opt/venv
COPY pyproject.toml README.md /src/
COPY reassign_cli /src/reassign_cli
COPY docker/wheels /wheels
RUN set -e; \
    if ls /wheels/reassign_cli-*.whl >/dev/null 2>&1; then \
      c=; if [ -f /wheels/constraints.txt ]; then c="-c /wheels/constraints.txt"; fi; \
      /opt/venv/bin/pip install --no-cache-dir --no-index --find-links /wheels $c "reassign_cli[spark]"; \
    else \
      /opt/venv/bin/pip install --no-cache-dir "/src[spark]"; \
    fi; \
    /opt/venv/bin/kafka-reassign --version; \
    /opt/venv/bin/python -c 'import pyspark; print("pyspark", pyspark.__version__)'; java -version
ENV PATH=/opt/venv/bin:$PATH
ENTRYPOINT ["kafka-reassign"]
