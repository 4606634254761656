package dev.idem.spring.boot;

import dev.idem.spi.ConfigException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Shows an invalid Idem configuration as Spring Boot shows its own: every problem, in Idem's words, with the paths
 * they name relative to {@code idem.}.
 */
final class IdemFailureAnalyzer extends AbstractFailureAnalyzer<ConfigException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, ConfigException cause) {
        return new FailureAnalysis("Idem's configuration, the properties under 'idem.' (each path below is relative"
                + " to it: pipelines.orders.concurrency is idem.pipelines.orders.concurrency), is invalid."
                + System.lineSeparator() + cause.getMessage(),
                "Correct the properties named above. Every key is described in Idem's docs/configuration.md, with"
                + " 'idem.' in front of its path.", cause);
    }
}
