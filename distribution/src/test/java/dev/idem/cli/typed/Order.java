package dev.idem.cli.typed;

import java.math.BigDecimal;

/**
 * The payload type of {@link OrderRecordingHandler}: a record of the handler's own JAR, which {@code bin/idem run}
 * decodes with its Jackson through the handler's class loader, no annotations.
 */
public record Order(String orderId, BigDecimal total, String customer) {
}
