/**
 * The built-in ID extractors, plugins like any other (found through {@code ServiceLoader}, so their providers are
 * public): {@code header}, {@code broker-id}, {@code cloudevents}, {@code json-pointer}, {@code template} and
 * {@code sha256}. Each finds a message's idempotency key, ordering key, or a sequence guard's aggregate or number;
 * {@link dev.idem.runtime.extract.PayloadHash} is the payload digest the {@code sha256} extractor and the pipeline's
 * fingerprints share.
 */
package dev.idem.runtime.extract;
