/**
 * The runtime's own code, not an API: public only where another runtime package must reach it, and free to change
 * in any release. {@link dev.idem.runtime.internal.Suggestions} is the one "did you mean" of configuration keys and
 * plugin ids.
 */
package dev.idem.runtime.internal;
