package dev.settle.ingest.http;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Cursor paging of the list endpoints: {@code ?after=<cursor>&limit=<n>}; the answer carries the list and
 * {@code next}, the {@code after} of the following page, or null on the last page. A client that follows
 * {@code next} until it is null sees every item exactly once, in the order of the list. A cursor names the
 * last item of a page (never an offset), so rows added meanwhile do not shift the pages.
 *
 * <p>A page is read with {@code limit + 1} rows: the extra row is not shown, it only says that another page
 * exists, so the last page says so itself ({@code next} null) instead of costing one more empty request.
 */
public final class Paging {
    /** Items per page when the request gives no {@code limit}. */
    public static final int DEFAULT_LIMIT = 100;
    /** The largest {@code limit} a request may ask for; above it is a 400. */
    public static final int MAX_LIMIT = 500;

    private static final Base64.Encoder TOKEN = Base64.getUrlEncoder().withoutPadding();

    private Paging() {}

    /** The page size: {@link #DEFAULT_LIMIT} when absent, else an integer from 1 to {@link #MAX_LIMIT}. */
    public static int limit(String value) {
        return value == null ? DEFAULT_LIMIT : (int) positive("limit", value, MAX_LIMIT);
    }

    /** A row-id cursor: null when absent (the first page), else a positive integer. */
    public static Long afterId(String value) {
        return value == null ? null : positive("after", value, Long.MAX_VALUE);
    }

    /** An integer from 1 to {@code max}; anything else is a 400 problem of type {@code invalid-<name>}. */
    public static long positive(String name, String value, long max) {
        try {
            long parsed = Long.parseLong(value.trim());
            if (parsed >= 1 && parsed <= max) {
                return parsed;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw ApiProblem.badRequest("invalid-" + name, name + " must be an integer from 1 to " + max);
    }

    /** An opaque cursor made of several numbers (a position in an order by several columns). */
    public static String token(long... parts) {
        StringBuilder text = new StringBuilder();
        for (long part : parts) {
            if (!text.isEmpty()) {
                text.append('.');
            }
            text.append(part);
        }
        return TOKEN.encodeToString(text.toString().getBytes(StandardCharsets.US_ASCII));
    }

    /** The numbers of a cursor made by {@link #token}; anything else is a 400 problem {@code invalid-after}. */
    public static long[] untoken(String value, int parts) {
        try {
            String text = new String(Base64.getUrlDecoder().decode(value.trim()), StandardCharsets.US_ASCII);
            String[] split = text.split("\\.", -1);
            if (split.length == parts) {
                long[] numbers = new long[parts];
                for (int i = 0; i < parts; i++) {
                    numbers[i] = Long.parseLong(split[i]);
                }
                return numbers;
            }
        } catch (IllegalArgumentException e) {
            // refused below (NumberFormatException is one)
        }
        throw invalidAfter();
    }

    public static ApiProblem invalidAfter() {
        return ApiProblem.badRequest("invalid-after", "after must be the next value of an earlier page of this list");
    }

    /**
     * The answer: the first {@code limit} of {@code rows} under {@code field}, and {@code next}, the cursor of the
     * last one shown when {@code rows} holds more than {@code limit} (read with {@code limit + 1}), else null.
     */
    public static <T> Map<String, Object> page(String field, List<T> rows, int limit, Function<T, Object> cursor) {
        return page(field, rows, limit, cursor, row -> row);
    }

    /** As {@link #page(String, List, int, Function)}, each row shown as {@code view} makes it. */
    public static <T> Map<String, Object> page(
            String field, List<T> rows, int limit, Function<T, Object> cursor, Function<T, ?> view) {
        boolean more = rows.size() > limit;
        List<T> shown = more ? rows.subList(0, limit) : rows;
        Map<String, Object> body = new LinkedHashMap<>();
        body.put(field, shown.stream().map(view).toList());
        body.put("next", more ? cursor.apply(shown.getLast()) : null);
        return body;
    }
}
