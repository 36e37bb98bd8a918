package dev.settle.ingest.http;

import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;

import java.net.URI;

/** A request refused with an RFC 9457 problem; thrown before anything is written. */
public class ApiProblem extends RuntimeException {
    private final HttpStatus status;
    private final String type;
    private final long retryAfterSeconds;

    public ApiProblem(HttpStatus status, String type, String detail) {
        this(status, type, detail, 0);
    }

    /** @param retryAfterSeconds sent as {@code Retry-After} when positive */
    public ApiProblem(HttpStatus status, String type, String detail, long retryAfterSeconds) {
        this(status, type, detail, retryAfterSeconds, null);
    }

    /** @param cause the failure behind the refusal, for the log; never shown to the client */
    public ApiProblem(HttpStatus status, String type, String detail, long retryAfterSeconds, Throwable cause) {
        super(detail, cause);
        this.status = status;
        this.type = type;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    public long retryAfterSeconds() {
        return retryAfterSeconds;
    }

    public HttpStatus status() {
        return status;
    }

    public ProblemDetail toProblemDetail(String instance) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, getMessage());
        problem.setType(URI.create("https://settle.dev/problems/" + type));
        problem.setTitle(status.getReasonPhrase());
        if (instance != null) {
            problem.setInstance(URI.create(instance));
        }
        return problem;
    }

    public static ApiProblem badRequest(String type, String detail) {
        return new ApiProblem(HttpStatus.BAD_REQUEST, type, detail);
    }

    /** Well-formed JSON whose value is refused. */
    public static ApiProblem unprocessable(String type, String detail) {
        return new ApiProblem(HttpStatus.UNPROCESSABLE_CONTENT, type, detail);
    }

    public static ApiProblem tooLarge(String type, String detail) {
        return new ApiProblem(HttpStatus.CONTENT_TOO_LARGE, type, detail);
    }

    public static ApiProblem conflict(String type, String detail) {
        return new ApiProblem(HttpStatus.CONFLICT, type, detail);
    }

    public static ApiProblem notFound(String detail) {
        return new ApiProblem(HttpStatus.NOT_FOUND, "not-found", detail);
    }
}
