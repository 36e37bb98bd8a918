package dev.settle.ingest.demo;

import dev.settle.ingest.http.ApiAccess;
import dev.settle.ingest.http.ApiKeyFilter;
import dev.settle.ingest.http.ApiProblem;
import dev.settle.ingest.http.Caller;
import dev.settle.ingest.http.Paging;
import dev.settle.ingest.http.SessionId;
import dev.settle.schema.DbTime;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The demo agent's side effects: {@code GET /v1/ledger/entries?sessionId=...}, oldest first, a page at a time
 * ({@code &after=&limit=}, see {@link Paging}). Served only while {@code settle.demo.enabled} is true (the
 * default); without the demo the route does not exist (404, like any unknown route).
 */
@RestController
@ConditionalOnProperty(name = LedgerController.DEMO_ENABLED, havingValue = "true", matchIfMissing = true)
@ApiAccess(Caller.Role.TENANT)
public class LedgerController {
    /** The switch of the demo: false leaves it out of this deployment. */
    public static final String DEMO_ENABLED = "settle.demo.enabled";
    /** Parameters: tenant, session external id, after entry id (0 for the first page), rows. */
    static final String ENTRIES = """
            SELECT l.id, s.external_id, l.execution_id, l.amount, l.category, l.note, l.created_at
              FROM ledger_entry l JOIN chat_session s ON s.id = l.session_id
             WHERE s.tenant_id = ? AND s.external_id = ? AND l.id > ?
             ORDER BY l.id
             LIMIT ?""";

    private final JdbcTemplate jdbc;

    public LedgerController(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @GetMapping("/v1/ledger/entries")
    public Map<String, Object> entries(
            @RequestAttribute(ApiKeyFilter.TENANT) String tenant,
            @RequestParam(required = false) String sessionId,
            @RequestParam(required = false) String after,
            @RequestParam(required = false) String limit) {
        if (sessionId == null) {
            throw ApiProblem.badRequest("missing-session-id", "the query parameter sessionId is required");
        }
        SessionId.check(sessionId);
        int rows = Paging.limit(limit);
        Long from = Paging.afterId(after);
        List<Map<String, Object>> entries = jdbc.query(
                ENTRIES,
                (rs, i) -> {
                    Map<String, Object> e = new LinkedHashMap<>();
                    e.put("entryId", rs.getLong("id"));
                    e.put("sessionId", rs.getString("external_id"));
                    e.put("executionId", rs.getLong("execution_id"));
                    e.put("amount", rs.getBigDecimal("amount"));
                    e.put("category", rs.getString("category"));
                    e.put("note", rs.getString("note"));
                    e.put("createdAt", DbTime.instant(rs, "created_at").toString());
                    return e;
                },
                tenant,
                sessionId,
                from == null ? 0 : from,
                rows + 1);
        return Paging.page("entries", entries, rows, e -> e.get("entryId"));
    }
}
