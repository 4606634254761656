# syntax=docker/dockerfile:1
#
# The Idem distribution as a container image, built from this source tree:
#
#   docker build -t idem:0.1.0-SNAPSHOT .
#   docker run --rm -p 9464:9464 --stop-timeout 45 idem:0.1.0-SNAPSHOT
#
# See README.md, "Container and Kubernetes", for mounting conf/ and a handler JAR, and deploy/kubernetes/.
# distribution/src/test/java/dev/idem/cli/DockerfileIT.java checks this file against the built distribution
# (no Docker engine needed): every path used below exists, the user is not root, the port and the health
# check match, and the image's conf/idem.yaml is valid and serves on every interface.

ARG MAVEN_IMAGE=maven:3.9-eclipse-temurin-17
ARG RUNTIME_IMAGE=eclipse-temurin:17-jre

# ---- build: the distribution and the modules it packs; the tests run in the project's own build, not here
FROM ${MAVEN_IMAGE} AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/root/.m2 \
    mvn -B -ntp -pl distribution -am package -DskipTests
# The archive's name carries the version; unpack it to a fixed path and fit its conf/idem.yaml to a
# container (deploy/docker/container-config.sed: the ops port on every interface). The grep fails the build
# when the template no longer has the lines the sed script rewrites.
RUN mkdir /idem \
 && tar -xzf distribution/target/idem-*.tar.gz -C /idem --strip-components=1 \
 && sed -i -f deploy/docker/container-config.sed /idem/conf/idem.yaml \
 && grep -q '^  http.host: ' /idem/conf/idem.yaml \
 && grep -q '^  http.port: ' /idem/conf/idem.yaml

# ---- runtime: the distribution on a Temurin 17 JRE, as a non-root user
FROM ${RUNTIME_IMAGE}

# A fixed numeric user, so that Kubernetes' runAsNonRoot can verify it without looking the name up.
RUN groupadd --system --gid 10001 idem \
 && useradd --system --uid 10001 --gid idem --home-dir /opt/idem --no-create-home --shell /usr/sbin/nologin idem

# Owned by root and read-only to idem: bin/, lib/, plugins/, conf/, handlers/. Writable by idem: data/ (the
# embedded broker's and H2 store's files) and logs/ (logs/idem.log; the console log goes to stderr too).
COPY --from=build /idem /opt/idem
COPY --chmod=0755 deploy/docker/idem-healthcheck /opt/idem/bin/idem-healthcheck
RUN chown -R 10001:10001 /opt/idem/data /opt/idem/logs

# No -XX:+ExitOnOutOfMemoryError, as in bin/idem: a handler's OutOfMemoryError is its run's failure (the message
# runs again alone, then is dead-lettered), the same outcome in the image as outside it. See README.md.
ENV IDEM_HOME=/opt/idem \
    JAVA_OPTS="-XX:MaxRAMPercentage=75"
WORKDIR /opt/idem
USER 10001:10001

# /health/live, /health/ready and /metrics (runtime.http.port).
EXPOSE 9464
# State of the embedded default (ActiveMQ's KahaDB, the H2 store). conf/ and handlers/ are bind-mount points
# rather than volumes, so that an image built FROM this one can add its handler JARs and configuration.
VOLUME ["/opt/idem/data"]

# Plain bash against 127.0.0.1:${IDEM_HTTP_PORT:-9464}/health/live: no curl, no second JVM.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 CMD ["/opt/idem/bin/idem-healthcheck"]

# Exec form all the way: bin/idem execs java, so the JVM is PID 1 and receives SIGTERM itself, then stops
# gracefully within runtime.shutdown-timeout (30s): give docker stop more than that (--stop-timeout 45).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/opt/idem/bin/idem"]
CMD ["run"]
