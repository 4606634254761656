/**
 * Contract tests that every Idem plugin must pass, published as {@code idem-testkit} so that a
 * third-party plugin is tested exactly as the bundled ones are.
 *
 * <ul>
 *   <li>{@link dev.idem.testkit.DedupStoreContract}: extend it in a dedup store's tests.</li>
 *   <li>{@link dev.idem.testkit.ManualTicker}: a time source tests advance instead of sleeping.</li>
 *   <li>{@link dev.idem.testkit.TestPluginConfig}: a plugin configuration of declared defaults, to
 *       call a provider's {@code create} without the runtime.</li>
 *   <li>{@link dev.idem.testkit.fault}: a TCP fault proxy between a client and its server (latency, bandwidth,
 *       black hole, half-open, reset), and the checks of a fault test (acks audited against the store, handler
 *       runs by key).</li>
 * </ul>
 *
 * <p>Depends on JUnit Jupiter and AssertJ; add {@code idem-testkit} with {@code test} scope.
 */
package dev.idem.testkit;
