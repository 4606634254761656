package dev.idem.cli.logging;

import ch.qos.logback.classic.pattern.MessageConverter;
import ch.qos.logback.classic.spi.ILoggingEvent;

/**
 * {@code %safeMsg} in {@code conf/logback.xml}: the formatted message with credentials masked and no
 * forgeable line (see {@link SafeLogText}). Logback creates one per pattern; thread-safe.
 */
public final class SafeMessageConverter extends MessageConverter {

    @Override
    public String convert(ILoggingEvent event) {
        return SafeLogText.of(super.convert(event));
    }
}
