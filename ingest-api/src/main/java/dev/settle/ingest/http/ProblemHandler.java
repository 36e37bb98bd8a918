package dev.settle.ingest.http;

import jakarta.servlet.http.HttpServletRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.RecoverableDataAccessException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.CannotGetJdbcConnectionException;
import org.springframework.transaction.TransactionException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;

/** Every error leaves as application/problem+json (RFC 9457); Spring's own errors included. */
@RestControllerAdvice
class ProblemHandler extends ResponseEntityExceptionHandler {
    private static final Logger log = LoggerFactory.getLogger(ProblemHandler.class);

    @ExceptionHandler(ApiProblem.class)
    ResponseEntity<ProblemDetail> apiProblem(ApiProblem e, HttpServletRequest request) {
        ResponseEntity.BodyBuilder answer = ResponseEntity.status(e.status());
        if (e.retryAfterSeconds() > 0) {
            answer.header("Retry-After", Long.toString(e.retryAfterSeconds()));
        }
        return answer.contentType(MediaType.APPLICATION_PROBLEM_JSON).body(e.toProblemDetail(request.getRequestURI()));
    }

    /** The database is unreachable: nothing was accepted, and the client may retry (with its Idempotency-Key). */
    @ExceptionHandler({
        DataAccessResourceFailureException.class,
        RecoverableDataAccessException.class,
        TransientDataAccessException.class,
        TransactionException.class,
        CannotGetJdbcConnectionException.class
    })
    ResponseEntity<ProblemDetail> unavailable(Exception e, HttpServletRequest request) {
        log.warn("database unavailable on {} {}: {}", request.getMethod(), request.getRequestURI(), e.toString());
        ApiProblem problem = new ApiProblem(
                HttpStatus.SERVICE_UNAVAILABLE,
                "unavailable",
                "the database is unavailable; nothing was accepted. Retry shortly, with the same Idempotency-Key");
        return ResponseEntity.status(503)
                .header("Retry-After", "1")
                .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .body(problem.toProblemDetail(request.getRequestURI()));
    }

    @ExceptionHandler(Exception.class)
    ResponseEntity<ProblemDetail> unexpected(Exception e, HttpServletRequest request) {
        log.error("unexpected error on {} {}", request.getMethod(), request.getRequestURI(), e);
        ApiProblem problem = new ApiProblem(
                HttpStatus.INTERNAL_SERVER_ERROR, "internal", "the request failed; nothing was accepted");
        return ResponseEntity.status(500)
                .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .body(problem.toProblemDetail(request.getRequestURI()));
    }
}
