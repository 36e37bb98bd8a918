package dev.settle.testsupport;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The prompt cache of a simulated provider: it remembers the messages of every request and tells how much of a new
 * request's messages an earlier one already began with. The prefix is measured on the messages' JSON as sent (roles,
 * contents, tool calls and their ids), so anything that changes an early message breaks the cache from there on.
 * Requests are compared within a partition (a key the caller chooses, e.g. one per conversation), so a long run
 * does not compare every request with every other.
 */
public final class PrefixCache {
    /** Tokens are counted as this many characters of the messages' JSON. */
    public static final int CHARS_PER_TOKEN = 4;

    private final Map<String, List<String>> seen = new ConcurrentHashMap<>();

    /** The request's prompt as the cache and the token counts see it: its messages' JSON. */
    public static String prompt(ModelRequest request) {
        return request.json().path("messages").toString();
    }

    /** Tokens of a prompt, at {@value #CHARS_PER_TOKEN} characters a token (at least 1). */
    public static int tokens(String prompt) {
        return Math.max(1, prompt.length() / CHARS_PER_TOKEN);
    }

    /**
     * @return cached tokens for {@code request}: its longest common prefix with an earlier request of the same
     *     partition, in tokens; the request is then remembered
     */
    public int remember(String partition, ModelRequest request) {
        String messages = prompt(request);
        List<String> earlier = seen.computeIfAbsent(partition, k -> new ArrayList<>());
        int longest = 0;
        synchronized (earlier) {
            for (String e : earlier) {
                longest = Math.max(longest, commonPrefix(e, messages));
            }
            earlier.add(messages);
        }
        return longest / CHARS_PER_TOKEN;
    }

    public void clear() {
        seen.clear();
    }

    private static int commonPrefix(String a, String b) {
        int n = Math.min(a.length(), b.length());
        int i = 0;
        while (i < n && a.charAt(i) == b.charAt(i)) {
            i++;
        }
        return i;
    }
}
