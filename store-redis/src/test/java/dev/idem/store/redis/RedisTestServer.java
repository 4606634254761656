package dev.idem.store.redis;

import dev.idem.testkit.ExternalService;
import io.lettuce.core.RedisURI;

/**
 * The shared Redis the suites run against: {@code IDEM_TEST_REDIS_URL}, else 127.0.0.1:6379, else a
 * container when Docker is available; otherwise the suite is skipped (or fails under {@code CI=true}).
 */
final class RedisTestServer {

    /** The logical database of the contract suites, unless {@code IDEM_TEST_REDIS_URL} names one. */
    static final int CONTRACT_DATABASE = 9;

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

    /**
     * The same server, in a logical database of the contract suites' own ({@value #CONTRACT_DATABASE}, unless the
     * URL names one). Their clock moves by a SCAN of the keyspace ({@link RedisKeyspace#advance}), and the real
     * time that SCAN takes passes on the keys' TTLs too: over a shared database holding millions of other keys (a
     * benchmark's, say) it took 4 s on a busy machine, longer than the suites' one-second clock resolution, and keys
     * expired before their "just before expiry" checks.
     */
    static synchronized String contractUrl() {
        String server = url();
        if (RedisURI.create(server).getDatabase() != 0) {
            return server;
        }
        int query = server.indexOf('?');
        String address = query < 0 ? server : server.substring(0, query);
        return (address.endsWith("/") ? address : address + "/") + CONTRACT_DATABASE
                + (query < 0 ? "" : server.substring(query));
    }
}
