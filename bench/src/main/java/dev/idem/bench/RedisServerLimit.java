package dev.idem.bench;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Redis server's own limit for the least a claim can be: {@code redis-benchmark} sending
 * {@code SET key value NX PX} on random fresh keys, pipelined 64 deep, one million of them. The companion of
 * {@link RedisStoreBenchmark}, to run in the same session; its keys expire within a minute.
 *
 * <p>Run: {@code java -cp bench/target/benchmarks.jar dev.idem.bench.RedisServerLimit [requests]}
 * (Redis at {@code IDEM_BENCH_REDIS_URL}, default {@code redis://127.0.0.1:6379}; {@code redis-benchmark}
 * on {@code PATH}).
 */
public final class RedisServerLimit {

    private static final Pattern RATE = Pattern.compile("([0-9.]+) requests per second");

    private RedisServerLimit() {
    }

    public static void main(String[] args) throws IOException, InterruptedException {
        URI url = URI.create(RedisStoreBenchmark.URL);
        String requests = args.length > 0 ? args[0] : "1000000";
        String key = "idem-bench-limit-" + UUID.randomUUID().toString().substring(0, 8) + ":__rand_int__";
        List<String> command = List.of("redis-benchmark", "-h", url.getHost(), "-p", Integer.toString(url.getPort()),
                "-q", "-n", requests, "-P", "64", "-r", "100000000",
                "SET", key, "C|4611686018427387904|1|1764000000000000|600000|", "NX", "PX", "60000");
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(5, TimeUnit.MINUTES) || process.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed:\n" + output);
        }
        // With -q, progress lines end in carriage returns; the last line holds the result.
        String[] lines = output.split("[\r\n]");
        String last = lines[lines.length - 1];
        Matcher rate = RATE.matcher(output.substring(output.lastIndexOf("SET")));
        System.out.println(String.join(" ", command));
        System.out.println(rate.find() ? "redis-benchmark SET NX PX, -P 64: " + rate.group(1) + " keys/s" : last);
    }
}
