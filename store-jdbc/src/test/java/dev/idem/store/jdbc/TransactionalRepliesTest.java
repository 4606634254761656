package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.BatchHandler;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.ReplyAddress;
import dev.idem.testkit.memory.InMemoryBroker;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Request/reply in transactional mode, end to end on the in-memory broker and a real database: the reply is recorded
 * in the handler's transaction and published through the outbox after the commit; a run that rolls back replies
 * nothing; a duplicate request gets the stored reply with its own correlation ID. For a single handler and a batch
 * handler.
 */
class TransactionalRepliesTest {

    @TempDir
    Path h2Directory;

    @ParameterizedTest(name = "{0}, batch handler {1}")
    @CsvSource({"postgresql, false", "postgresql, true", "h2, false", "h2, true"})
    void aCommittedRunRepliesThroughTheOutboxAndADuplicateGetsTheStoredReply(String database, boolean batch) {
        TestDatabase db = database.equals("postgresql") ? TestDatabase.postgres() : TestDatabase.h2(h2Directory);
        String business = db.newTable("quotes");
        db.jdbi().useHandle(h -> h.execute("CREATE TABLE " + business + " (message_id VARCHAR(64) NOT NULL)"));
        InMemoryBroker broker = new InMemoryBroker(System::nanoTime, 100);
        AtomicInteger runs = new AtomicInteger();
        MessageHandler single = (message, context) -> {
            context.transaction(Handle.class).orElseThrow().execute("INSERT INTO " + business + " VALUES (?)",
                    message.idempotencyKey().orElseThrow());
            context.reply(("quote " + UUID.randomUUID()).getBytes(StandardCharsets.UTF_8), Map.of());
            if (runs.incrementAndGet() == 1 && !batch) {
                throw new IllegalStateException("rolls back after replying (test)");
            }
        };
        BatchHandler batched = (messages, context) -> {
            for (Message m : messages) {
                single.handle(m, context.of(m));
            }
        };
        // Both queued before the runtime starts: they arrive in one delivery, and a batch handler runs them together.
        request(broker, "q-1", "corr-a");
        request(broker, "q-2", "corr-c");
        IdemRuntime runtime = Idem.builder().configYaml("""
                broker: { type: memory }
                store:
                  type: jdbc
                  jdbc: { url: "%s", %s table: %s }
                pipelines:
                  quotes:
                    source: requests
                    transactional: true
                    retry: { max-attempts: 3, initial-backoff: 1ms, max-backoff: 1ms }
                    batch: { size: 10, linger: 1ms }
                """.formatted(db.url, db.username == null ? "" : "username: " + db.username + ",", db.table))
                .env(Map.of())
                .broker("memory", broker.connect())
                .handler("quotes", batch ? batched : single)
                .start();
        try {
            List<InboundMessage> replies = new ArrayList<>();
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                replies.addAll(broker.drain("replies"));
                return replies.size() == 2;
            });
            request(broker, "q-1", "corr-b");
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                replies.addAll(broker.drain("replies"));
                return replies.size() == 3;
            });

            Map<String, byte[]> byCorrelation = new java.util.HashMap<>();
            replies.forEach(r -> byCorrelation.put(correlation(r), r.payload()));
            assertThat(byCorrelation).containsOnlyKeys("corr-a", "corr-b", "corr-c");
            assertThat(byCorrelation.get("corr-b")).as("the stored reply, the committed run's")
                    .isEqualTo(byCorrelation.get("corr-a"));
            assertThat(runs).as(batch ? "one run each, in one batch" : "q-1 rolled back once, then each committed")
                    .hasValue(batch ? 2 : 3);
            int rows = db.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM " + business)
                    .mapTo(Integer.class).one());
            assertThat(rows).as("one committed row per request").isEqualTo(2);
            if (batch) {
                assertThat(runtime.meterRegistry().find("idem.batch.size").summary().max())
                        .as("the two ran in one batch transaction").isEqualTo(2);
            }
        } finally {
            runtime.stop(Duration.ofSeconds(10));
            broker.close();
            db.dropTables();
        }
    }

    private static void request(InMemoryBroker broker, String id, String correlation) {
        broker.publishRequest("requests", new OutboundMessage(null, null, Map.of("message-id", id),
                "quote?".getBytes(StandardCharsets.UTF_8)), ReplyAddress.of("replies", correlation));
    }

    private static String correlation(InboundMessage reply) {
        return new String(ReplyAddress.correlationFromHeader(reply.headers().get(ReplyAddress.CORRELATION_ID_HEADER)),
                StandardCharsets.UTF_8);
    }
}
