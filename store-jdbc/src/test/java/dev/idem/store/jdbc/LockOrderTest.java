package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.StoreKey;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class LockOrderTest {

    @Test
    void aGroupOfMoreKeysThanOneStatementTakesEveryLockInKeyOrderAcrossItsStatements() {
        List<ClaimRow> members = new ArrayList<>();
        for (int i = 0; i < 2_500; i++) {
            members.add(row("orders", "id-" + i));
        }
        Collections.shuffle(members, new Random(7));

        List<List<ClaimRow>> statements = JdbcTransactionalRuns.lockOrder(members);

        assertThat(statements).extracting(List::size).containsExactly(1_000, 1_000, 500);
        List<ClaimRow> locked = statements.stream().flatMap(List::stream).toList();
        assertThat(locked).isSortedAccordingTo(ClaimRow::compareTo).containsExactlyInAnyOrderElementsOf(members);
    }

    @Test
    void twoGroupsSharingKeysInOppositeOrdersLockTheSharedKeysInTheSameOrder() {
        List<ClaimRow> first = new ArrayList<>();
        for (int i = 0; i < 1_500; i++) {
            first.add(row("orders", "k" + i));
        }
        List<ClaimRow> second = new ArrayList<>(first.subList(500, 1_500));
        second.add(row("orders", "only-second"));
        Collections.reverse(second);

        List<ClaimRow> firstOrder = JdbcTransactionalRuns.lockOrder(first).stream().flatMap(List::stream).toList();
        List<ClaimRow> secondOrder = JdbcTransactionalRuns.lockOrder(second).stream().flatMap(List::stream).toList();

        List<String> shared = ids(secondOrder);
        shared.remove("only-second");
        List<String> firstShared = ids(firstOrder);
        firstShared.retainAll(shared);
        assertThat(shared).isEqualTo(firstShared);
    }

    @Test
    void keysCompareAsUnsignedBytesNamespaceFirst() {
        List<ClaimRow> rows = new ArrayList<>(List.of(row("b", "a"), row("a", "é"), row("a", "z")));

        List<ClaimRow> locked = JdbcTransactionalRuns.lockOrder(rows).get(0);

        // "é" is 0xC3 0xA9 in UTF-8: after "z" (0x7A) as unsigned bytes, before it as signed ones.
        assertThat(ids(locked)).containsExactly("z", "é", "a");
    }

    private static ClaimRow row(String namespace, String id) {
        return ClaimRow.completed(new StoreKey(namespace, id), "f", Duration.ofMinutes(1), 1);
    }

    private static List<String> ids(List<ClaimRow> rows) {
        List<String> ids = new ArrayList<>();
        for (ClaimRow row : rows) {
            ids.add(new String(row.id(), StandardCharsets.UTF_8));
        }
        return ids;
    }
}
