package dev.idem.runtime.extract;

import static dev.idem.runtime.extract.Messages.create;
import static dev.idem.runtime.extract.Messages.json;
import static dev.idem.runtime.extract.Messages.payload;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.IdExtractor;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class Sha256IdExtractorTest {

    private final IdExtractor extractor = create(new Sha256IdExtractorProvider());

    @Test
    void isTheLowercaseHexSha256OfThePayload() {
        assertThat(extractor.extract(json("abc")))
                .isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    @Test
    void emptyPayloadStillHasAKey() {
        assertThat(extractor.extract(payload(new byte[0])))
                .isEqualTo("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    @Test
    void threadsHashingAtOnceDoNotCorruptEachOther() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Callable<Boolean>> tasks = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int seed = t;
                tasks.add(() -> {
                    for (int i = 0; i < 2_000; i++) {
                        byte[] payload = ("payload-" + seed + "-" + i).getBytes();
                        String expected = HexFormat.of()
                                .formatHex(MessageDigest.getInstance("SHA-256").digest(payload));
                        if (!expected.equals(extractor.extract(payload(payload)))) {
                            return false;
                        }
                    }
                    return true;
                });
            }
            for (Future<Boolean> result : pool.invokeAll(tasks)) {
                assertThat(result.get()).isTrue();
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
