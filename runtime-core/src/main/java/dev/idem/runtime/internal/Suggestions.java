package dev.idem.runtime.internal;

import java.util.Collection;
import java.util.Locale;
import java.util.Optional;

/**
 * Finds the accepted name a person most likely meant when they typed an unknown one: a configuration key, a
 * plugin id. The one edit distance of the runtime. Stateless.
 */
public final class Suggestions {

    private Suggestions() {
    }

    /**
     * The closest candidate, if it is close enough to be a plausible typo; ties go to the
     * earliest candidate so suggestions follow declaration order.
     */
    public static Optional<String> closest(String typed, Collection<String> candidates) {
        String needle = typed.toLowerCase(Locale.ROOT);
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : candidates) {
            int d = distance(needle, candidate.toLowerCase(Locale.ROOT));
            if (d < bestDistance) {
                best = candidate;
                bestDistance = d;
            }
        }
        if (best == null || bestDistance == 0 && typed.equals(best)) {
            return Optional.empty();
        }
        // A distance budget that grows with length: "leese" -> "lease" is a typo, "id" -> "to" is not.
        int budget = Math.max(1, Math.min(3, needle.length() / 3));
        return bestDistance <= budget ? Optional.of(best) : Optional.empty();
    }

    /**
     * Optimal-string-alignment distance: Levenshtein plus adjacent transpositions, because
     * swapped letters ("retyr") are the commonest typo and plain Levenshtein counts them twice.
     */
    public static int distance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) {
            d[i][0] = i;
        }
        for (int j = 0; j <= b.length(); j++) {
            d[0][j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
                }
            }
        }
        return d[a.length()][b.length()];
    }
}
