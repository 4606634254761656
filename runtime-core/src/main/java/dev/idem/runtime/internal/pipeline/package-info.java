/**
 * One pipeline, in stages of one job each, all built by {@link dev.idem.runtime.internal.pipeline.Pipeline}:
 * {@code Intake} (keys and the batched claim, on the adapter's thread), {@code KeyScheduler} (a queue per ordering
 * key and the worker pool), {@code Runs} with a {@code RunStrategy} ({@code ClaimedRun} for plain mode,
 * {@code TransactionalRun}), {@code GroupCommit} (plain mode's batched completions, on committer threads),
 * {@code Settlement} (every broker settle) and {@code LeaseKeeper} (renewals and handler timeouts). The state they
 * share has one owner each: {@code StoreCalls} (every store call, its back-off and whether the store is down),
 * {@code InFlight} (the in-flight bound, the held keys, the watched batches) and {@code Outcomes} (the counts). A
 * delivery is a {@code Work} with its {@code Claim} and its {@code Run}. {@code docs/architecture.md} draws it.
 */
package dev.idem.runtime.internal.pipeline;
