package dev.settle.testsupport;

import java.util.ArrayList;
import java.util.List;

/**
 * The prompt cache of a simulated provider: it remembers the messages of every request and tells how much of a new
 * request's messages an earlier one already began with. The prefix is measured on the messages' JSON as sent (roles,
 * contents, tool calls and their ids), so anything that changes an early message breaks the cache from there on.
 */
final class PrefixCache {
    static final int CHARS_PER_TOKEN = 4;

    private final List<String> seen = new ArrayList<>();

    /** @return cached tokens for {@code request}: its longest common prefix with an earlier request, in tokens */
    synchronized int remember(ModelRequest request) {
        String messages = request.json().path("messages").toString();
        int longest = 0;
        for (String earlier : seen) {
            longest = Math.max(longest, commonPrefix(earlier, messages));
        }
        seen.add(messages);
        return longest / CHARS_PER_TOKEN;
    }

    synchronized void clear() {
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
