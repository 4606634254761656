package dev.idem.store.redis;

import dev.idem.testkit.ExternalService;

/**
 * The shared Redis the suites run against: {@code IDEM_TEST_REDIS_URL}, else 127.0.0.1:6379, else a
 * container when Docker is available; otherwise the suite is skipped (or fails under {@code CI=true}).
 */
final class RedisTestServer {

    private static String url;

    private RedisTestServer() {
    }

    static synchronized String url() {
        if (url == null) {
            url = ExternalService.locate("Redis", "IDEM_TEST_REDIS_URL", "redis://127.0.0.1:6379",
                    "Start one with: redis-server --daemonize yes --port 6379 --save \"\" --appendonly no",
                    RedisContainer::start);
        }
        return url;
    }
}
