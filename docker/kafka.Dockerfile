# The Kafka image of docker-compose.yml: ZooKeeper, Kafka 3.9.2 (ZooKeeper mode) and Kafka 4.3.1 (KRaft)
# on any image with a Java 17+ runtime and bash. Nothing is downloaded here: the jars come from the build
# context (docker/jars/, filled by `scripts/docker jars` from the Maven Central cache of scripts/cluster).
#
#   docker build --network host -f docker/kafka.Dockerfile -t reassign-cli/kafka:local docker
#   docker build ... --build-arg BASE=reassign-cli/base:bookworm    (the base scripts/docker bootstraps)
ARG BASE=eclipse-temurin:17-jre
FROM ${BASE}
COPY jars/kafka-3.9.2/libs/ /opt/kafka-3.9.2/libs/
COPY jars/kafka-4.3.1/libs/ /opt/kafka-4.3.1/libs/
COPY kafka-run /usr/local/bin/kafka-run
ENV RC_KAFKA_VERSION=3.9.2
ENTRYPOINT ["/usr/local/bin/kafka-run"]
