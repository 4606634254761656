package ${package};

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.api.MessageHandler;
import dev.idem.handlertest.CrashReport;
import dev.idem.handlertest.CrashTest;
import dev.idem.handlertest.EffectRecorder;
import dev.idem.handlertest.TestMessage;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The handler through the real pipeline, killed at every point a crash can hit (before the handler, after each effect,
 * after each durable step, before the key completes), each message coming again afterwards: the crash-test kit,
 * idem-handler-test. Read the report's rows as "for how many messages did each effect run as often as without
 * crashes"; its verdict names the points where an effect ran twice.
 *
 * <p>The handler has no effect outside Idem yet. Here a stand-in follows the pattern that makes a call to another
 * service effectively once: a durable step ({@code context.step}) whose call carries the key the runtime derives for
 * it ({@code context.idempotencyKey}), to a service that applies a key once (as payment APIs honour
 * {@code Idempotency-Key}). Replace it with your own call and your own fake of the service, recording to the
 * {@link EffectRecorder} each time the fake applies the effect.
 */
class ${handlerClassName}CrashTest {

    private final EffectRecorder effects = new EffectRecorder();
    /** A fake service that applies each key once, as the real one would. */
    private final Map<String, String> applied = new ConcurrentHashMap<>();

    private String reserve(String idempotencyKey, String order) {
        String earlier = applied.putIfAbsent(idempotencyKey, order);
        if (earlier == null) {
            effects.record("reservation");
        }
        return order;
    }

    @Test
    void eachOrderIsReservedOnceWhereverTheConsumerIsKilled() {
        MessageHandler handler = (message, context) -> {
            new ${handlerClassName}().handle(message, context);
            context.step("reserve", String.class,
                    () -> reserve(context.idempotencyKey("reserve"), message.idempotencyKey().orElseThrow()));
        };

        CrashReport report = CrashTest.of(handler)
                .effects(effects)
                .messages(10, i -> TestMessage.of("m-" + i, "{\"orderId\":\"o-" + i + "\",\"total\":\"" + (i + 1) + ".50\"}"))
                .duplicate(0.2)
                .redeliverEach()
                .run();

        report.assertEffectivelyOnce();
        assertThat(report.rows()).extracting(CrashReport.Row::label).contains("after effect 1 ('reservation')",
                "after step 1 ('reserve')", "after the handler, before the key completed");
    }
}
