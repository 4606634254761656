package dev.idem.runtime.internal.pipeline;

import java.text.MessageFormat;
import java.util.MissingResourceException;
import java.util.ResourceBundle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The handler's {@code HandlerContext.logger()}: a {@link System.Logger}, since {@code idem-api} depends on the JDK
 * alone, that writes through SLF4J like the runtime's own lines, to SLF4J logger {@code idem.handler.<pipeline>}.
 * So a handler's lines go where the runtime's go ({@code logs/idem.log} and the console in the distribution), carry
 * the MDC the worker set ({@code idem.pipeline}, and {@code idem.key} while the handler runs), and pass through the
 * same converters (the distribution's escape control characters, so a line break cannot forge a line). Left to
 * {@link System#getLogger}, they went to {@code java.util.logging} instead, past all of that.
 *
 * <p>Messages are formatted as {@link System.Logger} specifies: a message with parameters is a
 * {@link MessageFormat} pattern ({@code "order {0} charged"}), one without is written as it is; a resource bundle,
 * when given, maps the message as a key to its localized text (a key it lacks is written as it is). The text is
 * formatted only when the level is enabled. Levels: {@code TRACE} and {@code ALL} to trace, {@code DEBUG} to
 * debug, {@code INFO} to info, {@code WARNING} to warn, {@code ERROR} to error; {@code OFF} logs nothing.
 * Immutable and thread-safe.
 */
final class HandlerLogger implements System.Logger {

    /** The SLF4J loggers of handlers are this plus the pipeline's name. */
    static final String PREFIX = "idem.handler.";

    private final Logger logger;

    HandlerLogger(Logger logger) {
        this.logger = logger;
    }

    /** The logger of the handler of {@code pipeline}. */
    static HandlerLogger of(String pipeline) {
        return new HandlerLogger(LoggerFactory.getLogger(PREFIX + pipeline));
    }

    @Override
    public String getName() {
        return logger.getName();
    }

    @Override
    public boolean isLoggable(Level level) {
        return switch (level) {
            case ALL, TRACE -> logger.isTraceEnabled();
            case DEBUG -> logger.isDebugEnabled();
            case INFO -> logger.isInfoEnabled();
            case WARNING -> logger.isWarnEnabled();
            case ERROR -> logger.isErrorEnabled();
            case OFF -> false;
        };
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
        if (isLoggable(level)) {
            write(level, localized(bundle, msg), thrown);
        }
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String format, Object... params) {
        if (isLoggable(level)) {
            write(level, format(localized(bundle, format), params), null);
        }
    }

    private void write(Level level, String text, Throwable thrown) {
        // The one-argument and (String, Throwable) forms: SLF4J does not look for {} in the text.
        switch (level) {
            case ALL, TRACE -> logger.trace(text, thrown);
            case DEBUG -> logger.debug(text, thrown);
            case INFO -> logger.info(text, thrown);
            case WARNING -> logger.warn(text, thrown);
            case ERROR -> logger.error(text, thrown);
            case OFF -> {
            }
        }
    }

    private static String localized(ResourceBundle bundle, String key) {
        if (bundle == null || key == null) {
            return key;
        }
        try {
            return bundle.getString(key);
        } catch (MissingResourceException e) {
            return key;
        }
    }

    /** As the JDK's own loggers do: a pattern that {@link MessageFormat} refuses is written as it is. */
    private static String format(String format, Object... params) {
        if (format == null || params == null || params.length == 0) {
            return format;
        }
        try {
            return MessageFormat.format(format, params);
        } catch (IllegalArgumentException e) {
            return format;
        }
    }
}
