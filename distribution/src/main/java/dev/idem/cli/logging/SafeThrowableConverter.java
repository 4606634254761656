package dev.idem.cli.logging;

import ch.qos.logback.classic.pattern.ExtendedThrowableProxyConverter;
import ch.qos.logback.classic.spi.IThrowableProxy;

/**
 * {@code %safeEx} in {@code conf/logback.xml}: the stack trace as {@code %xEx} writes it, with credentials
 * in exception messages masked and no forgeable line (see {@link SafeLogText}). Thread-safe.
 */
public final class SafeThrowableConverter extends ExtendedThrowableProxyConverter {

    @Override
    protected String throwableProxyToString(IThrowableProxy proxy) {
        return SafeLogText.of(super.throwableProxyToString(proxy));
    }
}
