--liquibase formatted sql

-- The one schema of Settle. Every timestamp is DATETIME(6) in UTC, written by the database clock
-- (UTC_TIMESTAMP(6)) in the statement that changes the state, never by a JVM clock.
-- The entries below are in the order of their numbers. One that was applied is never edited, not even a comment
-- in it or a heading after it: every database recorded its checksum (ChangelogTest pins them). A change of the
-- schema is a new entry at the end.

--changeset settle:1-chat-session
CREATE TABLE chat_session (
  id                   BIGINT       NOT NULL AUTO_INCREMENT,
  tenant_id            VARCHAR(64)  NOT NULL DEFAULT 'default',
  external_id          VARCHAR(128) NOT NULL,
  -- bumped by every accepted user message; the version of a message is the value after its bump
  version              BIGINT       NOT NULL DEFAULT 0,
  -- highest version covered by a committed reply
  replied_version      BIGINT       NOT NULL DEFAULT 0,
  -- version a turn last failed at (model down): no automatic retry until version moves past it
  failed_version       BIGINT       NOT NULL DEFAULT 0,
  -- created_at of the oldest message with version > replied_version; NULL when all are answered
  oldest_unanswered_at DATETIME(6)  NULL,
  last_message_at      DATETIME(6)  NULL,
  -- the session lease (fencing): token of the holder, epoch bumped on every claim, expiry on the DB clock
  lease_token          CHAR(36)     NULL,
  lease_epoch          BIGINT       NOT NULL DEFAULT 0,
  lease_expires_at     DATETIME(6)  NULL,
  created_at           DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_session_tenant_external (tenant_id, external_id),
  KEY ix_session_unanswered (oldest_unanswered_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

--changeset settle:1-chat-message
CREATE TABLE chat_message (
  id              BIGINT       NOT NULL AUTO_INCREMENT,
  message_uid     VARCHAR(40)  NOT NULL,
  session_id      BIGINT       NOT NULL,
  role            VARCHAR(16)  NOT NULL,
  text            MEDIUMTEXT   NOT NULL,
  -- user messages: the session version after this message
  version         BIGINT       NULL,
  -- assistant messages: the span of user versions this reply answers
  covers_from     BIGINT       NULL,
  covers_version  BIGINT       NULL,
  turn_id         BIGINT       NULL,
  idempotency_key VARCHAR(255) NULL,
  body_sha256     CHAR(64)     NULL,
  created_at      DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_message_uid (message_uid),
  UNIQUE KEY uk_message_session_version (session_id, version),
  -- never two replies ending at the same version
  UNIQUE KEY uk_message_session_covers (session_id, covers_version),
  UNIQUE KEY uk_message_session_idempotency (session_id, idempotency_key),
  KEY ix_message_session_order (session_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

--changeset settle:1-chat-turn
CREATE TABLE chat_turn (
  id                BIGINT       NOT NULL AUTO_INCREMENT,
  session_id        BIGINT       NOT NULL,
  lease_token       CHAR(36)     NOT NULL,
  lease_epoch       BIGINT       NOT NULL,
  from_version      BIGINT       NOT NULL,
  to_version        BIGINT       NOT NULL,
  -- RUNNING -> COMMITTED | DISCARDED | FAILED, every transition guarded by lease_token
  state             VARCHAR(16)  NOT NULL,
  reason            VARCHAR(500) NULL,
  model_calls       INT          NOT NULL DEFAULT 0,
  prompt_tokens     INT          NOT NULL DEFAULT 0,
  completion_tokens INT          NOT NULL DEFAULT 0,
  started_at        DATETIME(6)  NOT NULL,
  ended_at          DATETIME(6)  NULL,
  PRIMARY KEY (id),
  KEY ix_turn_session (session_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

--changeset settle:1-debounce-timer
-- Isolated from the conversation rows (seed 001): finishing a turn never touches a timer.
CREATE TABLE debounce_timer (
  session_id    BIGINT       NOT NULL,
  fire_at       DATETIME(6)  NOT NULL,
  -- oldest unanswered message + max-wait: fire_at never moves past it
  deadline_at   DATETIME(6)  NOT NULL,
  armed_version BIGINT       NOT NULL,
  armed_by      VARCHAR(16)  NOT NULL,
  armed_at      DATETIME(6)  NOT NULL,
  PRIMARY KEY (session_id),
  KEY ix_timer_fire (fire_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

--changeset settle:1-webhook-delivery
-- The outbox: one row per reply, written in the transaction that commits the reply.
CREATE TABLE webhook_delivery (
  id              BIGINT        NOT NULL AUTO_INCREMENT,
  webhook_id      VARCHAR(64)   NOT NULL,
  session_id      BIGINT        NOT NULL,
  event_type      VARCHAR(32)   NOT NULL,
  payload         MEDIUMTEXT    NOT NULL,
  -- PENDING -> DELIVERED | FAILED; attempts are claimed by claim_token until claimed_until
  status          VARCHAR(16)   NOT NULL,
  attempts        INT           NOT NULL DEFAULT 0,
  next_attempt_at DATETIME(6)   NOT NULL,
  claim_token     CHAR(36)      NULL,
  claimed_until   DATETIME(6)   NULL,
  last_status     INT           NULL,
  last_error      VARCHAR(1000) NULL,
  created_at      DATETIME(6)   NOT NULL,
  delivered_at    DATETIME(6)   NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_delivery_webhook_id (webhook_id),
  KEY ix_delivery_due (status, next_attempt_at),
  KEY ix_delivery_session (session_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

--changeset settle:1-webhook-attempt
CREATE TABLE webhook_attempt (
  id          BIGINT        NOT NULL AUTO_INCREMENT,
  delivery_id BIGINT        NOT NULL,
  attempt_no  INT           NOT NULL,
  started_at  DATETIME(6)   NOT NULL,
  status_code INT           NULL,
  latency_ms  BIGINT        NULL,
  error       VARCHAR(1000) NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_attempt_delivery_no (delivery_id, attempt_no)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- tools (issue 3)

--changeset settle:3-tool-execution
-- One row per intended tool call. A side-effecting call is keyed by idem_key = sha256(session, span_from,
-- tool, canonical arguments, ordinal of that identical call in its turn): a discarded turn's successor
-- serves the same span and computes the same key, so it gets the recorded result instead of a second
-- side effect. The row is the call/result pair: it cannot be half-written.
CREATE TABLE tool_execution (
  id             BIGINT        NOT NULL AUTO_INCREMENT,
  session_id     BIGINT        NOT NULL,
  turn_id        BIGINT        NOT NULL,
  -- first version of the unanswered span this call serves (replied_version + 1 when it was made)
  span_from      BIGINT        NOT NULL,
  idem_key       CHAR(64)      NULL,
  call_id        VARCHAR(100)  NOT NULL,
  tool_name      VARCHAR(64)   NOT NULL,
  arguments_json TEXT          NOT NULL,
  ordinal        INT           NOT NULL,
  side_effect    BOOLEAN       NOT NULL,
  -- PENDING -> EXECUTING -> COMPLETED | FAILED; every transition guarded by the session's lease token
  status         VARCHAR(16)   NOT NULL,
  -- FAILED because it never ran to the end (reaped, crashed): a later turn may run it again
  retryable      BOOLEAN       NOT NULL DEFAULT FALSE,
  result         TEXT          NULL,
  lease_token    CHAR(36)      NOT NULL,
  created_at     DATETIME(6)   NOT NULL,
  started_at     DATETIME(6)   NULL,
  ended_at       DATETIME(6)   NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_tool_execution_idem (idem_key),
  KEY ix_tool_execution_session (session_id, id),
  KEY ix_tool_execution_status (status, started_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

--changeset settle:3-ledger-entry
-- The demo agent's side effect (seed 000's bookkeeping): one row per completed create_transaction.
CREATE TABLE ledger_entry (
  id           BIGINT         NOT NULL AUTO_INCREMENT,
  session_id   BIGINT         NOT NULL,
  execution_id BIGINT         NOT NULL,
  amount       DECIMAL(12, 2) NOT NULL,
  category     VARCHAR(64)    NOT NULL,
  note         VARCHAR(500)   NULL,
  created_at   DATETIME(6)    NOT NULL,
  PRIMARY KEY (id),
  -- a second guard under the idempotency key: one ledger row per execution, ever
  UNIQUE KEY uk_ledger_execution (execution_id),
  KEY ix_ledger_session (session_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- streaming, events and policies (issue 4)

--changeset settle:4-session-burst
-- Where each debounced burst ended: the debounce worker writes one row per fired timer (the version the timer
-- had seen), in the transaction that deletes the timer. Under the enqueue policy a turn answers only up to the
-- first end above replied_version, so bursts that piled up while a long turn ran still get a reply each.
-- The reply commit deletes the ends it covered.
CREATE TABLE session_burst (
  session_id  BIGINT      NOT NULL,
  end_version BIGINT      NOT NULL,
  fired_at    DATETIME(6) NOT NULL,
  PRIMARY KEY (session_id, end_version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

--changeset settle:4-session-events-and-policy
-- The per-session event log behind GET /v1/sessions/{id}/events. seq is allocated by bumping
-- chat_session.event_seq in the same transaction that inserts the event: the session row lock is held to
-- the commit, so events become visible in seq order and a reader resuming after seq N never misses one.
ALTER TABLE chat_session
  ADD COLUMN event_seq BIGINT      NOT NULL DEFAULT 0,
  -- double-texting policy: merge | enqueue | reject; NULL = the deployment's default
  ADD COLUMN policy    VARCHAR(16) NULL;

CREATE TABLE session_event (
  session_id BIGINT      NOT NULL,
  seq        BIGINT      NOT NULL,
  type       VARCHAR(32) NOT NULL,
  turn_id    BIGINT      NULL,
  -- reply.delta only: the chunk's number in its turn; the streamed reply is persisted as these rows
  chunk_seq  INT         NULL,
  data       MEDIUMTEXT  NOT NULL,
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (session_id, seq),
  -- each chunk written exactly once
  UNIQUE KEY uk_event_chunk (turn_id, chunk_seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

ALTER TABLE chat_turn
  ADD COLUMN streamed_chars INT NOT NULL DEFAULT 0,
  ADD COLUMN tokens_estimated BOOLEAN NOT NULL DEFAULT FALSE;
-- webhook delivery (issue 5)

--changeset settle:5-webhook-delivery-endpoint
-- Each delivery carries its endpoint, fixed when the reply is committed (tenants may have different ones).
-- NULL only for rows written while no SETTLE_WEBHOOK_URL was set: the first claim stamps the configured one.
-- ASCII (URLs are sent in their ASCII form), so that it can key webhook_endpoint.
ALTER TABLE webhook_delivery
  ADD COLUMN endpoint_url VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NULL AFTER event_type;

--changeset settle:5-webhook-delivery-replay
-- POST /v1/webhooks/deliveries/{id}/retry moves a FAILED delivery back to PENDING: the retry schedule restarts
-- (attempt numbers keep counting, the schedule step is attempts - attempts_before_replay), and replayed_at marks
-- a round asked for by an operator, which is attempted even if its endpoint is disabled.
ALTER TABLE webhook_delivery
  ADD COLUMN attempts_before_replay INT NOT NULL DEFAULT 0 AFTER attempts,
  ADD COLUMN replayed_at DATETIME(6) NULL AFTER delivered_at;

--changeset settle:5-webhook-endpoint
-- Endpoints that answered 410 Gone: no delivery is attempted to a disabled endpoint (it becomes FAILED with the
-- reason) except an operator retry, whose 2xx re-enables it.
CREATE TABLE webhook_endpoint (
  url             VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  disabled_at     DATETIME(6)   NULL,
  disabled_reason VARCHAR(1000) NULL,
  created_at      DATETIME(6)   NOT NULL,
  updated_at      DATETIME(6)   NOT NULL,
  PRIMARY KEY (url)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;


-- tenants and operations (issue 8)

--changeset settle:8-tenant
-- A tenant owns sessions (chat_session.tenant_id). Its webhook URL and secrets (whsec_..., space-separated
-- during rotation) and its default double-texting policy override the deployment's settings; NULL = use them.
-- The row 'default' is the tenant of the deployment's single SETTLE_API_KEY.
CREATE TABLE tenant (
  id              VARCHAR(64)   NOT NULL,
  name            VARCHAR(200)  NOT NULL,
  webhook_url     VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NULL,
  webhook_secrets VARCHAR(2000) NULL,
  default_policy  VARCHAR(16)   NULL,
  created_at      DATETIME(6)   NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
INSERT INTO tenant (id, name, created_at) VALUES ('default', 'default', UTC_TIMESTAMP(6));

--changeset settle:8-api-key
-- API keys are shown once, at creation; only their SHA-256 is stored. prefix identifies a key in listings.
CREATE TABLE api_key (
  id          BIGINT       NOT NULL AUTO_INCREMENT,
  tenant_id   VARCHAR(64)  NOT NULL,
  key_hash    CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  prefix      VARCHAR(16)  NOT NULL,
  created_at  DATETIME(6)  NOT NULL,
  revoked_at  DATETIME(6)  NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_api_key_hash (key_hash),
  KEY ix_api_key_tenant (tenant_id),
  CONSTRAINT fk_api_key_tenant FOREIGN KEY (tenant_id) REFERENCES tenant (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

--changeset settle:9-message-created-index
-- Idempotency keys are kept for a retention (SETTLE_IDEMPOTENCY_RETENTION, 24 h): the ingest API forgets older
-- ones by walking this index forward from where its last purge ended.
CREATE INDEX ix_message_created ON chat_message (created_at);

--changeset settle:16-debounce-timer-typing
-- Typing signals hold an armed timer (DebounceTimers, TypingHolds). window_fire_at: when the messages alone
-- would fire it (NULL = fire_at, the row was never held). last_message_at: database time of the latest message
-- the timer armed for; a signal from before it is stale. typing_at: database time of the latest signal that
-- holds the timer, held_until = typing_at + the typing hold (both NULL = no hold; a newer message clears them).
ALTER TABLE debounce_timer
  ADD COLUMN window_fire_at  DATETIME(6) NULL,
  ADD COLUMN last_message_at DATETIME(6) NULL,
  ADD COLUMN typing_at       DATETIME(6) NULL,
  ADD COLUMN held_until      DATETIME(6) NULL;

--changeset settle:16-debounce-timer-window-cause
-- Which window set the timer's fire_at: 'base' (the configured window) or 'learned' (the session's adaptive one).
-- Rows armed without one (the sweeper, the agent's re-arm) use the base window.
ALTER TABLE debounce_timer
  ADD COLUMN window_cause VARCHAR(16) NOT NULL DEFAULT 'base';

--changeset settle:16-session-pacing
-- What the debounce worker learned of a session's pauses (PacingRule): the ring of its last samples in ms,
-- comma-separated, oldest first; the window its latest message armed with and its cause ('base' | 'learned');
-- that message's time and how many messages its burst had so far. Hints: rewritten by a plain upsert.
CREATE TABLE session_pacing (
  session_id      BIGINT       NOT NULL,
  samples         VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  window_micros   BIGINT       NOT NULL,
  window_cause    VARCHAR(16)  NOT NULL,
  last_message_at DATETIME(6)  NOT NULL,
  burst_messages  INT          NOT NULL,
  updated_at      DATETIME(6)  NOT NULL,
  PRIMARY KEY (session_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

--changeset settle:16-tenant-pacing
-- The same ring over all of a tenant's sessions: a session with fewer than 3 samples of its own uses it.
-- Appended to in one statement, so concurrent sessions of a tenant never overwrite each other's samples.
CREATE TABLE tenant_pacing (
  tenant_id  VARCHAR(64)  NOT NULL,
  samples    VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  updated_at DATETIME(6)  NOT NULL,
  PRIMARY KEY (tenant_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

--changeset settle:16-turn-cached-tokens
-- The part of prompt_tokens a provider served from its prompt cache (OpenAI's usage.prompt_tokens_details.cached_tokens).
ALTER TABLE chat_turn ADD COLUMN cached_tokens INT NOT NULL DEFAULT 0;

--changeset settle:16-tool-execution-position
-- Where a call sits in the conversation, so that every later prompt shows it exactly where the model made it:
-- which model call of its turn made it (calls of one model call form one assistant message), and the last version
-- its turn answered (the call and its result come after the messages up to that version, before any newer one).
ALTER TABLE tool_execution ADD COLUMN model_call INT NULL, ADD COLUMN answers_version BIGINT NULL;

--changeset settle:18-debounce-timer-records-burst
-- Whether firing this timer records where its burst ended (session_burst): only the enqueue policy reads those
-- rows, so a timer armed for a merge or reject session skips the insert (and its reply the delete). Rows armed
-- without knowing the policy (the sweeper, the agent's re-arm, an older worker) record it, as before.
ALTER TABLE debounce_timer ADD COLUMN records_burst BOOLEAN NOT NULL DEFAULT TRUE;
