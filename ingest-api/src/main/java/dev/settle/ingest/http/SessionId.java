package dev.settle.ingest.http;

import java.util.regex.Pattern;

/** A session's id as clients name it: 1-128 characters of {@code [A-Za-z0-9._:-]}; anything else is a 400. */
public final class SessionId {
    private static final Pattern SESSION_ID = Pattern.compile("[A-Za-z0-9._:-]{1,128}");

    private SessionId() {}

    /** @return the id, checked */
    public static String check(String sessionId) {
        if (sessionId == null || !SESSION_ID.matcher(sessionId).matches()) {
            throw ApiProblem.badRequest("invalid-session-id", "sessionId must be 1-128 characters of [A-Za-z0-9._:-]");
        }
        return sessionId;
    }
}
