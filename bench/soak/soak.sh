#!/bin/sh
# The soak: bin/idem run (the built distribution) on Kafka + Redis (plain) and Kafka + PostgreSQL (transactional),
# each for a long time at 70 % of a throughput it measures first, with a kill -9 and a restart every few minutes,
# and a report per minute (heap after GC, threads, file descriptors, store and Kafka connections, lag, end-to-end
# latency p50/p99) that ends with lost = 0 or not. Not part of the build's tests; see the README, "Benchmarks".
#
#   bench/soak/soak.sh                                   30 minutes per setup, kill -9 every 5 minutes
#   bench/soak/soak.sh --duration 3m --kill-every 90s    a short run: one kill per setup
#   bench/soak/soak.sh --rate 1000 --duration 8m --kill-every 0 --retention 2m --purge-interval 5s
#                                                        a steady state: keys expire and are purged while the
#                                                        stream flows; is the store's size flat, does throughput hold
#   bench/soak/soak.sh --help                            every option
#
# Needs: a JDK 17 (java on the PATH or JAVA_HOME), Linux, Redis and PostgreSQL where the tests find them
# (IDEM_TEST_REDIS_URL, IDEM_TEST_POSTGRES_URL, else 127.0.0.1:6379 and 127.0.0.1:5432/test as postgres), and
#   mvn -q -B install -DskipTests            (the distribution and bench/target/benchmarks.jar)
# The report goes to stdout and to bench/target/soak-<time>/report.txt (or --work DIR); the exit code is 1 if a
# message was lost. SOAK_JAVA_OPTS sets the driver's JVM options (it runs the embedded Kafka broker and the producer).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd -P)
jar=$root/bench/target/benchmarks.jar
dist=$root/distribution/target/idem-0.1.0-SNAPSHOT
if [ ! -f "$jar" ]; then
  echo "soak: $jar is missing: build it with mvn -q -B install -DskipTests" >&2
  exit 2
fi
if [ ! -x "$dist/bin/idem" ]; then
  echo "soak: no built distribution at $dist: build it with mvn -q -B install -DskipTests" >&2
  exit 2
fi
if [ -n "${JAVA_HOME:-}" ]; then java_cmd=$JAVA_HOME/bin/java; else java_cmd=java; fi
cd "$root"
# shellcheck disable=SC2086
exec "$java_cmd" ${SOAK_JAVA_OPTS:--Xmx2g} -cp "$jar" dev.idem.bench.soak.Soak --distribution "$dist" "$@"
