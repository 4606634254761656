package dev.idem.store.redis;

import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;

/**
 * One of the store's Lua scripts ({@code record.lua} followed by the script's own file), called by its
 * SHA-1 with {@code EVALSHA}. A server that does not know the script (it restarted, failed over, or is a
 * cluster node added since) answers {@code NOSCRIPT}; the call is then sent again as {@code EVAL} with the
 * full text, which also caches the script there for the calls after it. A write that waits for replicas sends
 * its {@code WAIT} right behind the script, and again behind the {@code EVAL}, which the first one did not cover.
 *
 * <p>Immutable and thread-safe.
 */
final class LuaScript {

    private final String name;
    private final byte[] text;
    private final String sha;

    private LuaScript(String name, byte[] text) {
        this.name = name;
        this.text = text;
        this.sha = sha1(text);
    }

    /** Loads {@code <name>.lua} from this package, after the shared {@code record.lua}. */
    static LuaScript named(String name) {
        String source = resource("record.lua") + "\n" + resource(name + ".lua");
        return new LuaScript(name, source.getBytes(StandardCharsets.UTF_8));
    }

    /** Loads {@code <name>.lua} from this package, after the shared {@code record.lua} and {@code <helpers>.lua}. */
    static LuaScript named(String name, String helpers) {
        String source = resource("record.lua") + "\n" + resource(helpers + ".lua") + "\n" + resource(name + ".lua");
        return new LuaScript(name, source.getBytes(StandardCharsets.UTF_8));
    }

    String name() {
        return name;
    }

    byte[] text() {
        return text;
    }

    <T> CompletableFuture<T> run(RedisClusterAsyncCommands<byte[], byte[]> redis, ScriptOutputType output,
            byte[][] keys, byte[]... args) {
        return run(redis, null, output, keys, args);
    }

    /**
     * Runs the script and, unless {@code behind} is {@code null}, sends what {@code behind} sends (a {@code WAIT},
     * {@link ReplicaWait#behind}) right behind it on the same connection, without waiting for the script's answer.
     * The answer is the script's once both answered; it fails as the script did, else as {@code behind}'s did.
     */
    <T> CompletableFuture<T> run(RedisClusterAsyncCommands<byte[], byte[]> redis,
            Supplier<? extends CompletableFuture<?>> behind, ScriptOutputType output, byte[][] keys, byte[]... args) {
        CompletableFuture<T> bySha = redis.<T>evalsha(sha, output, keys, args).toCompletableFuture();
        CompletableFuture<?> after = behind == null ? null : behind.get();
        return bySha.handle((reply, failure) -> {
            if (failure == null) {
                return after == null ? bySha : after.thenApply(acknowledged -> reply);
            }
            if (!(unwrap(failure) instanceof RedisNoScriptException)) {
                return CompletableFuture.<T>failedFuture(unwrap(failure));
            }
            CompletableFuture<T> byText = redis.<T>eval(text, output, keys, args).toCompletableFuture();
            return behind == null ? byText : byText.thenCombine(behind.get(), (answer, acknowledged) -> answer);
        }).thenCompose(answer -> answer);
    }

    private static Throwable unwrap(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }

    private static String resource(String file) {
        try (InputStream in = LuaScript.class.getResourceAsStream(file)) {
            if (in == null) {
                throw new IllegalStateException("Missing script " + file + " beside " + LuaScript.class.getName());
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read script " + file, e);
        }
    }

    private static String sha1(byte[] text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(text));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("The JDK has no SHA-1, which every JDK must have", e);
        }
    }

    @Override
    public String toString() {
        return name + ".lua (" + sha + ")";
    }
}
