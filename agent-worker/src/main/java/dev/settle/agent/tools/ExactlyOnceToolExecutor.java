package dev.settle.agent.tools;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.exception.ToolArgumentsException;
import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.LeaseLostException;
import dev.settle.agent.lease.SessionLease;
import dev.settle.schema.Causes;
import dev.settle.schema.SessionEvents;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.json.JsonMapper;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The "side effects exactly once" promise (docs/PROMISES.md): a tool call runs at most once per intended call, through
 * retries, takeovers and discarded turns, and its effect and its record commit together.
 *
 * <ol>
 *   <li>Key the call: sha256(session, span_from, tool, canonical arguments, ordinal of this identical call in
 *       the turn). A discarded turn's successor serves the same span (replied_version + 1 has not moved) and
 *       computes the same keys; a user who really asks twice in one turn gets ordinals 1 and 2.</li>
 *   <li>Insert the call as PENDING (unique index on the key); if the key exists, re-read it: COMPLETED, or
 *       FAILED for a reason that will not change (bad arguments) → return the recorded result, run nothing.</li>
 *   <li>Take it to EXECUTING with a guarded UPDATE under the live lease, committed at once (a client sees the
 *       running step). This also takes over the call of a holder that died before its commit: its effect never
 *       committed. If another attempt's tool transaction still holds the row (a holder that lost its lease while
 *       its tool runs), wait for it to end without blocking on the lock: it can only roll back, because its fence
 *       will fail (below); then take the call over.</li>
 *   <li>One transaction: lock our execution row (it serialises attempts at one key), run the tool (its JDBC
 *       writes join the transaction), then the fence: lock the session row under our live lease — the
 *       {@code tool.completed} event's seq reservation does, guarded by the lease; from here to the commit no
 *       takeover can interleave —, mark COMPLETED guarded by our token <em>and</em> our lease still being live (a
 *       holder paused inside the tool past its TTL is dead even if nobody took over), commit. No lease → roll
 *       back: a holder that lost its lease cannot record a side effect. While the tool runs, no lock that a lease renewal or a POST needs is held: however slow the
 *       tool, its own heartbeat and those of every other session of the worker go on, and messages are
 *       accepted at once.</li>
 *   <li>The tool refused its arguments → FAILED (not retryable) with an error the model can read; nothing was
 *       written. So does a call that cannot even be recorded as asked: no tool name, or arguments larger than
 *       {@link #MAX_ARGUMENT_BYTES} (recorded as a short placeholder).</li>
 * </ol>
 * Read-only tools run directly and are recorded as COMPLETED pairs without a key, under the same live-lease
 * guard: a fenced-out holder cannot put a result into its successor's context.
 */
@Component
public class ExactlyOnceToolExecutor {
    private static final Logger log = LoggerFactory.getLogger(ExactlyOnceToolExecutor.class);
    private static final JsonMapper JSON = JsonMapper.builder().build();
    /** {@code tool_execution.arguments_json} is a TEXT column: 65,535 bytes. */
    static final int MAX_ARGUMENT_BYTES = 65_535;
    /** How often a turn looks whether an earlier attempt's tool transaction has ended. */
    static final java.time.Duration IN_FLIGHT_POLL = java.time.Duration.ofMillis(100);

    private final ToolCatalog catalog;
    private final ToolExecutions executions;
    private final TransactionTemplate tx;
    private final JdbcTemplate jdbc;
    /** How long a turn waits for an earlier attempt in flight: the tool timeout (default 2 × lease TTL). */
    private final java.time.Duration inFlightWait;

    public ExactlyOnceToolExecutor(
            ToolCatalog catalog,
            ToolExecutions executions,
            PlatformTransactionManager txManager,
            JdbcTemplate jdbc,
            AgentSettings settings) {
        this.inFlightWait = ToolReaper.timeout(settings);
        this.jdbc = jdbc;
        this.catalog = catalog;
        this.executions = executions;
        this.tx = new TransactionTemplate(txManager);
        this.tx.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
    }

    /** The calls of one turn: counts identical calls for their ordinals. */
    public final class TurnTools {
        private final SessionLease.Lease lease;
        private final long turnId;
        private final long spanFrom;
        private final Map<String, Integer> seen = new HashMap<>();
        private ToolExecutionRequest currentRequest;
        private String currentKey;
        private Integer modelCall;
        private Long answersVersion;

        TurnTools(SessionLease.Lease lease, long turnId, long spanFrom) {
            this.lease = lease;
            this.turnId = turnId;
            this.spanFrom = spanFrom;
        }

        /**
         * Where the calls executed next sit in the conversation: made by model call {@code modelCall} of this turn,
         * which answers the messages up to {@code answersVersion}.
         */
        public void position(int modelCall, long answersVersion) {
            this.modelCall = modelCall;
            this.answersVersion = answersVersion;
        }

        /** @return the result text the model gets for this call (an error text when it failed) */
        public String execute(ToolExecutionRequest request) {
            currentRequest = request;
            String name = request.name() == null ? "" : request.name();
            String arguments = request.arguments() == null ? "{}" : request.arguments();
            int argumentBytes = arguments.getBytes(StandardCharsets.UTF_8).length;
            boolean tooLarge = argumentBytes > MAX_ARGUMENT_BYTES;
            ToolCatalog.Entry tool = name.isBlank() ? null : catalog.get(name);
            String canonical;
            try {
                canonical = CanonicalJson.of(arguments);
            } catch (IllegalArgumentException e) {
                canonical = null;
            }
            boolean sideEffect = tool != null && tool.sideEffect();
            String identity = name + "\n" + (canonical == null ? arguments : canonical);
            int ordinal = seen.merge(identity, 1, Integer::sum);
            currentKey = key(lease.sessionId(), spanFrom, identity, ordinal);
            String key = sideEffect ? currentKey : null;
            String callId = request.id() == null || request.id().isBlank()
                    ? "call_" + turnId + "_" + seen.size()
                    : request.id();
            String recorded = tooLarge ? JSON.writeValueAsString(Map.of("omittedBytes", argumentBytes)) : arguments;
            ToolExecutions.Execution row = executions.insertOrGet(new ToolExecutions.Call(
                    lease.sessionId(),
                    turnId,
                    spanFrom,
                    key,
                    truncate(callId, 100),
                    truncate(name, 64),
                    recorded,
                    ordinal,
                    sideEffect,
                    lease.token(),
                    modelCall,
                    answersVersion));
            if (row == null) {
                throw new LeaseLostException();
            }
            if (row.done()) {
                log.info(
                        "tool {} #{} already {} in span {}: recorded result reused",
                        request.name(),
                        ordinal,
                        row.status(),
                        spanFrom);
                return row.result();
            }
            ToolExecutions.Start start = startWhenFree(row.id(), truncate(callId, 100));
            if (start == ToolExecutions.Start.IN_FLIGHT) {
                log.warn(
                        "tool execution {}: an earlier attempt still holds it after {}; not applied by this turn",
                        row.id(),
                        inFlightWait);
                return JSON.writeValueAsString(Map.of(
                        "error", "an earlier attempt at this call is still running; this turn did not apply it"));
            }
            if (start == ToolExecutions.Start.REFUSED) {
                ToolExecutions.Execution now = executions.byId(row.id());
                if (now.done()) {
                    return now.result();
                }
                throw new LeaseLostException();
            }
            currentRequest = ToolExecutionRequest.builder()
                    .id(truncate(callId, 100))
                    .name(name)
                    .arguments(recorded)
                    .build();
            announce("tool.started", row.id(), currentRequest, null, null);
            if (name.isBlank()) {
                return failed(row.id(), false, "the tool call names no tool");
            }
            if (tooLarge) {
                return failed(
                        row.id(),
                        false,
                        "arguments too large: " + argumentBytes + " bytes, at most " + MAX_ARGUMENT_BYTES);
            }
            if (tool == null) {
                return failed(row.id(), false, "no tool named " + name);
            }
            if (canonical == null) {
                return failed(row.id(), false, "arguments are not valid JSON");
            }
            return sideEffect ? runFenced(tool, request, row.id()) : runDirect(tool, request, row.id());
        }

        /**
         * Takes the call over; while an earlier attempt's transaction holds it, polls (never a blocking lock wait)
         * for at most {@link #inFlightWait}.
         */
        private ToolExecutions.Start startWhenFree(long executionId, String callId) {
            long deadline = System.nanoTime() + inFlightWait.toNanos();
            while (true) {
                ToolExecutions.Start start =
                        executions.tryStart(executionId, turnId, lease.token(), callId, modelCall, answersVersion);
                if (start != ToolExecutions.Start.IN_FLIGHT || System.nanoTime() - deadline > 0) {
                    return start;
                }
                try {
                    Thread.sleep(IN_FLIGHT_POLL);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new LeaseLostException(); // the heartbeat stops a turn whose lease is gone
                }
            }
        }

        private String runFenced(ToolCatalog.Entry tool, ToolExecutionRequest request, long executionId) {
            RuntimeException error;
            try {
                return tx.execute(status -> {
                    // only our execution row is locked while the tool runs
                    if (!executions.lockOwn(executionId, lease.token())) {
                        throw new LeaseLostException();
                    }
                    String result = invoke(tool, request, executionId);
                    // the fence, at the commit: the event's seq reservation locks the session row while our lease
                    // is live (the session row before the record that joins it: SessionLease#LOCK_HELD's lock
                    // order), so no takeover can interleave until the commit; the row is held over the event, the
                    // record and the commit only
                    event(executionId, currentRequest, "COMPLETED", result, "tool.completed"); // else rolls back
                    if (!executions.complete(executionId, result, lease.token())) {
                        throw new LeaseLostException(); // rolls the side effect back
                    }
                    return result;
                });
            } catch (LeaseLostException e) {
                throw e;
            } catch (RuntimeException e) {
                error = e;
            }
            return failed(executionId, error);
        }

        private String runDirect(ToolCatalog.Entry tool, ToolExecutionRequest request, long executionId) {
            String result;
            try {
                result = invoke(tool, request, executionId);
            } catch (RuntimeException e) {
                return failed(executionId, e);
            }
            // our call and our live lease: a holder fenced out meanwhile leaves the row EXECUTING (reaped later)
            if (!executions.complete(executionId, result, lease.token())) {
                throw new LeaseLostException();
            }
            announce("tool.completed", executionId, currentRequest, "COMPLETED", result);
            return result;
        }

        private String invoke(ToolCatalog.Entry tool, ToolExecutionRequest request, long executionId) {
            ToolCallContext.enter(lease.sessionId(), executionId, currentKey);
            try {
                return tool.executor().execute(request, lease.sessionId());
            } finally {
                ToolCallContext.exit();
            }
        }

        /** Refused arguments will be refused again: final. Anything else never committed: retryable. */
        private String failed(long executionId, RuntimeException e) {
            boolean refused = refusal(e);
            return failed(
                    executionId,
                    !refused,
                    (refused ? "tool call refused: " : "tool call failed and was not applied: ") + rootMessage(e));
        }

        private String failed(long executionId, boolean retryable, String error) {
            String result = JSON.writeValueAsString(Map.of("error", error));
            if (!executions.fail(executionId, retryable, result, lease.token())) {
                throw new LeaseLostException();
            }
            log.info("tool execution {} failed: {}", executionId, error);
            announce("tool.completed", executionId, currentRequest, "FAILED", result);
            return result;
        }

        /** In a transaction of its own. */
        private void announce(
                String type, long executionId, ToolExecutionRequest request, String status, String result) {
            tx.executeWithoutResult(s -> event(executionId, request, status, result, type));
        }

        /** In the caller's transaction, fenced by the lease. */
        private void event(long executionId, ToolExecutionRequest request, String status, String result, String type) {
            Map<String, Object> data = new LinkedHashMap<>();
            data.put("turnId", turnId);
            data.put("executionId", executionId);
            data.put("tool", request == null ? null : request.name());
            data.put("arguments", request == null ? null : request.arguments());
            if (status != null) {
                data.put("status", status);
                data.put("result", result);
            }
            if (!SessionEvents.append(
                    jdbc, lease.sessionId(), lease.token(), SessionEvents.Event.of(type, turnId, data))) {
                throw new LeaseLostException();
            }
        }
    }

    public TurnTools forTurn(SessionLease.Lease lease, long turnId, long spanFrom) {
        return new TurnTools(lease, turnId, spanFrom);
    }

    static String key(long sessionId, long spanFrom, String identity, int ordinal) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(
                    (sessionId + "\n" + spanFrom + "\n" + identity + "\n" + ordinal).getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(sha.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static boolean refusal(Throwable e) {
        return Causes.first(e, t -> t instanceof IllegalArgumentException || t instanceof ToolArgumentsException)
                != null;
    }

    private static String rootMessage(Throwable e) {
        Throwable root = Causes.root(e);
        return root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
    }

    private static String truncate(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max);
    }
}
