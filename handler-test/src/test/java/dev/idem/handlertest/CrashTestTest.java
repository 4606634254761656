package dev.idem.handlertest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The crash-test kit on handlers whose answer is known: it catches a plain-mode handler that writes without a guard
 * (twice after a crash between its write and its key's completion) and one whose step is not enough alone (twice after
 * a crash between the call and the step's record), and passes one whose call is a durable step carrying a derived key
 * to a service that honours the key. {@link TransactionalCrashTest} passes a transactional one.
 */
class CrashTestTest {

    private static final List<TestMessage> ORDERS = List.of(
            TestMessage.of("order-1", "10"), TestMessage.of("order-2", "20"), TestMessage.of("order-3", "30"),
            TestMessage.of("order-4", "40"), TestMessage.of("order-5", "50"), TestMessage.of("order-6", "60"));

    private final EffectRecorder effects = new EffectRecorder();

    /** A table outside the store, written without a guard: the plain-mode handler the honest window catches. */
    static final class Ledger {
        private final EffectRecorder effects;

        Ledger(EffectRecorder effects) {
            this.effects = effects;
        }

        void insert(String order) {
            effects.record("insert");
        }
    }

    /** A payment service that applies a charge once per {@code Idempotency-Key}, as Stripe does. */
    static final class Payments {
        private final EffectRecorder effects;
        private final Map<String, String> byKey = new ConcurrentHashMap<>();

        Payments(EffectRecorder effects) {
            this.effects = effects;
        }

        /**
         * Charges; a call with a key seen before answers the first charge's ID without charging. The charge and its
         * key are remembered together, as the service's own database does, then the effect is recorded: where the
         * test kills "after the effect".
         */
        String charge(String idempotencyKey, String amount) {
            String id = "ch_" + amount;
            if (idempotencyKey != null) {
                String earlier = byKey.putIfAbsent(idempotencyKey, id);
                if (earlier != null) {
                    return earlier;
                }
            }
            effects.record("charge");
            return id;
        }
    }

    @Test
    void plainHandlerThatInsertsWithoutAGuardIsCaughtBeforeItsKeyCompletes() {
        Ledger ledger = new Ledger(effects);
        MessageHandler handler = (message, context) -> ledger.insert(message.payloadAsString());

        CrashReport report = CrashTest.of(handler).effects(effects).messages(ORDERS).run();

        assertThat(report.effectivelyOnce()).isFalse();
        assertThat(report.verdict())
                .startsWith("NOT effectively once: ")
                .contains("'insert' ran more often than without crashes after effect 1 ('insert') (6 of 6")
                .contains("'insert' ran more often than without crashes after the handler, before the key completed"
                        + " (6 of 6");
        assertThat(row(report, "before the handler").effects().get("insert")).isEqualTo(new CrashReport.Tally(6, 0, 0));
        assertThat(row(report, "stream, no crash").effects().get("insert")).isEqualTo(new CrashReport.Tally(6, 0, 0));
        assertThat(row(report, "after effect 1 ('insert')").crashes()).isEqualTo(6);
        assertThatThrownBy(report::assertEffectivelyOnce).isInstanceOf(AssertionError.class)
                .hasMessageContaining(report.verdict()).hasMessageContaining("before the handler");
    }

    @Test
    void stepAloneLeavesTheWindowBetweenTheCallAndItsRecordOpen() {
        Payments payments = new Payments(effects);
        MessageHandler handler = (message, context) -> context.step("charge", String.class,
                () -> payments.charge(null, message.payloadAsString()));

        CrashReport report = CrashTest.of(handler).effects(effects).messages(ORDERS).run();

        assertThat(report.verdict()).isEqualTo("NOT effectively once: 'charge' ran more often than without crashes"
                + " after effect 1 ('charge') (6 of 6, e.g. message 'order-1' 2 times, 1 without crashes)");
        assertThat(row(report, "after step 1 ('charge')").effects().get("charge"))
                .as("a crash after the step's record replays it").isEqualTo(new CrashReport.Tally(6, 0, 0));
        assertThat(row(report, "after the handler, before the key completed").effects().get("charge"))
                .isEqualTo(new CrashReport.Tally(6, 0, 0));
    }

    @Test
    void stepWithADerivedKeyToAServiceThatHonoursItIsEffectivelyOnceWithDuplicatesRepeatsAndShuffling() {
        Payments payments = new Payments(effects);
        MessageHandler handler = new ChargingHandler(payments);

        CrashReport report = CrashTest.of(handler).effects(effects).messages(ORDERS)
                .duplicate(0.5).redeliverEach().shuffleWithin(4).run();

        report.assertEffectivelyOnce();
        assertThat(report.verdict()).isEqualTo(CrashReport.EFFECTIVELY_ONCE);
        assertThat(report.rows()).extracting(CrashReport.Row::label).containsExactly(
                "reference (each message once)", "stream, no crash", "before the handler", "after effect 1 ('charge')",
                "after step 1 ('charge')", "after the handler, before the key completed");
        assertThat(report.rows().subList(2, 6)).allSatisfy(row -> assertThat(row.crashes()).isEqualTo(6));
        assertThat(report.toString()).contains("Crash test of ChargingHandler: 6 messages, stream of")
                .contains("duplicated, each redelivered, shuffled within 4, seed 42), plain mode")
                .endsWith("verdict: effectively once");
    }

    @Test
    void streamHoldsEachMessageTheTimesItsOptionsSay() {
        CrashTest test = CrashTest.of((message, context) -> { }).messages(ORDERS).duplicate(1.0).redeliverEach()
                .shuffleWithin(3);

        List<TestMessage> stream = test.stream();

        assertThat(stream).hasSize(18);
        for (TestMessage m : ORDERS) {
            assertThat(stream).filteredOn(d -> d.id().equals(m.id())).hasSize(3);
        }
        assertThat(test.stream()).as("the same seed, the same stream").isEqualTo(stream);
    }

    @Test
    void aTestWithoutMessagesOrEffectsSaysWhatItLacks() {
        assertThatThrownBy(() -> CrashTest.of((message, context) -> { }).effects(effects).run())
                .hasMessageContaining("No messages");
        assertThatThrownBy(() -> CrashTest.of((message, context) -> { }).messages(ORDERS).run())
                .hasMessageContaining("sees no effect");
        assertThatThrownBy(() -> CrashTest.of((message, context) -> { }).messages(List.of(ORDERS.get(0),
                ORDERS.get(0)))).hasMessageContaining("listed twice");
    }

    /** Charges each order in a durable step, under the key derived for the call. */
    static final class ChargingHandler implements MessageHandler {
        private final Payments payments;

        ChargingHandler(Payments payments) {
            this.payments = payments;
        }

        @Override
        public void handle(Message message, HandlerContext context) throws Exception {
            context.step("charge", String.class,
                    () -> payments.charge(context.idempotencyKey("charge"), message.payloadAsString()));
        }
    }

    private static CrashReport.Row row(CrashReport report, String label) {
        return report.rows().stream().filter(r -> r.label().equals(label)).findFirst().orElseThrow();
    }
}
