package dev.idem.bench.soak;

/**
 * What the soak reads of the store once a minute, to see whether the store's size stays flat while keys expire and
 * are purged: {@link PostgresGauge} for the JDBC store on PostgreSQL, {@link RedisGauge} for Redis. Used by the
 * soak's one thread; {@link #close} releases its connections.
 */
interface StoreGauge extends AutoCloseable {

    /**
     * One reading; a figure the store does not have is -1.
     *
     * @param bytes the keys' size: PostgreSQL {@code pg_total_relation_size} of the keys table (heap, indexes,
     *     TOAST), Redis the server's {@code used_memory}
     * @param sideBytes PostgreSQL: the same of the side tables ({@code <table>_outbox}, {@code _steps}, ...) summed
     * @param keys rows of the keys table ({@code count(*)}), or the run's keys in Redis ({@code SCAN MATCH prefix*})
     * @param expired rows whose {@code expires_at} passed but are not purged yet
     * @param dead dead row versions of the keys table ({@code pg_stat_user_tables.n_dead_tup})
     * @param removed deleted so far: PostgreSQL {@code n_tup_del} of the keys table, Redis the server's
     *     {@code expired_keys} (every client's keys)
     * @param vacuums vacuums of the keys table so far, automatic and manual
     */
    record Sample(long bytes, long sideBytes, long keys, long expired, long dead, long removed, long vacuums) {
    }

    /** Reads the store now. */
    Sample sample() throws Exception;

    /** What {@link Sample#bytes} is, for the report. */
    String describe();

    @Override
    void close();
}
