package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class MessagePlanTest {

    private static final List<String> ORDER = List.of("{\"orderId\":\"order-{n}\",\"id\":\"{id}\"}");

    @Test
    void aFifthOfTenThousandRepeatAnotherMessagesIdAndPayload() {
        MessagePlan plan = MessagePlan.plan(10_000, 20, "msg-", ORDER, "order-{n}", 42);

        assertThat(plan).hasSize(10_000);
        assertThat(plan.size()).isEqualTo(10_000);
        assertThat(plan.unique()).isEqualTo(8_000);
        assertThat(plan.repeats()).isEqualTo(2_000);
        Map<String, List<MessagePlan.Planned>> byId = plan.stream()
                .collect(Collectors.groupingBy(MessagePlan.Planned::id));
        assertThat(byId).hasSize(8_000).containsKeys("msg-1", "msg-8000");
        assertThat(plan.stream().filter(MessagePlan.Planned::repeat)).hasSize(2_000);
        for (List<MessagePlan.Planned> copies : byId.values()) {
            assertThat(copies).extracting(m -> new String(m.payload(), StandardCharsets.UTF_8))
                    .as("every copy of an ID carries the same payload").containsOnly(
                            new String(copies.get(0).payload(), StandardCharsets.UTF_8));
            assertThat(copies).extracting(MessagePlan.Planned::key).containsOnly("order-" + copies.get(0).number());
        }
        assertThat(new String(byId.get("msg-7").get(0).payload(), StandardCharsets.UTF_8))
                .isEqualTo("{\"orderId\":\"order-7\",\"id\":\"msg-7\"}");
    }

    @Test
    void everyRepeatComesAfterItsOriginalAndRepeatsSpreadOverTheWholeRun() {
        List<MessagePlan.Planned> sent = MessagePlan.plan(10_000, 20, "msg-", ORDER, null, 42).stream().toList();

        Set<String> seen = new HashSet<>();
        for (MessagePlan.Planned m : sent) {
            assertThat(seen.add(m.id())).as(m.id()).isNotEqualTo(m.repeat());
        }
        assertThat(sent.subList(0, 5_000).stream().filter(MessagePlan.Planned::repeat).count()).isBetween(700L, 1_300L);
        assertThat(sent.subList(5_000, 10_000).stream().filter(MessagePlan.Planned::repeat).count())
                .isBetween(700L, 1_300L);
    }

    @Test
    void theLargestPlanIsMadeAsItIsTakenSoTakingTheFirstTenCostsNothing() {
        assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
            MessagePlan plan = MessagePlan.plan(Integer.MAX_VALUE, 100, "m-", ORDER, null, 1);

            assertThat(plan.size()).isEqualTo(Integer.MAX_VALUE);
            assertThat(plan.unique()).isEqualTo(1);
            assertThat(plan.repeats()).isEqualTo(Integer.MAX_VALUE - 1);
            assertThat(plan.stream().limit(10)).extracting(MessagePlan.Planned::id, MessagePlan.Planned::repeat)
                    .containsExactly(tuple("m-1", false), tuple("m-1", true), tuple("m-1", true), tuple("m-1", true),
                            tuple("m-1", true), tuple("m-1", true), tuple("m-1", true), tuple("m-1", true),
                            tuple("m-1", true), tuple("m-1", true));
        });
    }

    @Test
    void eachIterationYieldsTheSameMessages() {
        MessagePlan plan = MessagePlan.plan(500, 40, "m-", ORDER, null, 3);
        assertThat(plan.stream().map(MessagePlan.Planned::id).toList())
                .isEqualTo(plan.stream().map(MessagePlan.Planned::id).toList());
    }

    @Test
    void theSameSeedGivesTheSameOrder() {
        Function<Long, List<String>> ids = seed -> MessagePlan.plan(100, 30, "m-", ORDER, null, seed).stream()
                .map(MessagePlan.Planned::id).toList();
        assertThat(ids.apply(7L)).isEqualTo(ids.apply(7L)).isNotEqualTo(ids.apply(8L));
    }

    @Test
    void aSingleMessageKeepsTheIdAsGiven() {
        assertThat(MessagePlan.plan(1, 0, "order-17", ORDER, null, 1)).extracting(MessagePlan.Planned::id)
                .containsExactly("order-17");
    }

    /** Issue 24, item 13: {@code --id 'p3id-{n}'} gave {@code p3id-{n}1}. */
    @Test
    void anIdWithNIsATemplateAndOneWithoutIsAPrefix() {
        assertThat(MessagePlan.plan(3, 0, "p3id-{n}-eu", ORDER, null, 1)).extracting(MessagePlan.Planned::id)
                .containsExactly("p3id-1-eu", "p3id-2-eu", "p3id-3-eu");
        assertThat(MessagePlan.plan(1, 0, "p3id-{n}", ORDER, null, 1)).extracting(MessagePlan.Planned::id)
                .containsExactly("p3id-1");
        assertThat(MessagePlan.plan(2, 0, "order", ORDER, null, 1)).extracting(MessagePlan.Planned::id)
                .as("without {n}, with --count, a prefix numbered from 1").containsExactly("order1", "order2");
        assertThat(MessagePlan.plan(1, 0, "msg-", ORDER, null, 1)).extracting(MessagePlan.Planned::id)
                .containsExactly("msg-1");
        assertThat(new String(MessagePlan.plan(1, 0, "o-{n}", ORDER, null, 1).iterator().next().payload(),
                StandardCharsets.UTF_8)).as("{id} in a payload is the filled ID")
                .isEqualTo("{\"orderId\":\"order-1\",\"id\":\"o-1\"}");
        assertThatThrownBy(() -> MessagePlan.plan(2, 0, "x-{id}", ORDER, null, 1))
                .hasMessage("--id cannot use {id}, which stands for the ID itself; use {n} for the message's number:"
                        + " x-{id}");
    }

    @Test
    void countAndPercentageAreChecked() {
        assertThatThrownBy(() -> MessagePlan.plan(0, 0, "m-", ORDER, null, 1))
                .hasMessage("--count must be at least 1: 0");
        assertThatThrownBy(() -> MessagePlan.plan(10, 101, "m-", ORDER, null, 1))
                .hasMessage("--duplicates must be a percentage from 0 to 100: 101");
    }
}
