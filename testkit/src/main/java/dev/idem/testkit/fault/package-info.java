/**
 * Network faults for tests of a store or an adapter against a real server, and the checks a fault test makes.
 *
 * <ul>
 *   <li>{@link dev.idem.testkit.fault.FaultProxy}: a TCP proxy on the loopback interface in front of the server, whose
 *       faults (latency and bandwidth per direction, black hole, half-open, reset) a test switches while connections
 *       are open. Point the client under test at {@link dev.idem.testkit.fault.FaultProxy#proxiedUrl}.</li>
 *   <li>{@link dev.idem.testkit.fault.AckAudit}: a broker adapter in front of another that checks, as each ack is
 *       given, that it may be (typically: its key is completed in the store), to catch an ack before completion.</li>
 *   <li>{@link dev.idem.testkit.fault.HandlerRuns}: a handler's runs by key: which keys never ran, which ran
 *       again.</li>
 * </ul>
 *
 * <p>Plain Java, no dependency beyond {@code idem-api}. The bundled stores' and adapters' tests use them
 * ({@code RedisNetworkFaultTest}, {@code PostgresNetworkFaultTest}, {@code RabbitMqConnectionResetTest},
 * {@code KafkaConnectionResetTest}).
 */
package dev.idem.testkit.fault;
