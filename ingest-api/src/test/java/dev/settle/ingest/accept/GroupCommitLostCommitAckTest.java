package dev.settle.ingest.accept;

import dev.settle.ingest.IngestApp;
import dev.settle.ingest.http.ApiKeyFilter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link LostCommitAckTest} with group commit on (a lost batch commit acknowledgement: each message is looked up by
 * its id), and a batch that fails before its commit: each of its messages is accepted alone, exactly once.
 */
class GroupCommitLostCommitAckTest extends LostCommitAckTest {
    @BeforeAll
    static void start() {
        app = new IngestApp("lostack_gc", Map.of("settle.ingest.group-commit", "true"));
    }

    /** Posts {@code n} messages to {@code session} at once through {@code acceptance}; returns their versions. */
    static Set<Long> together(MessageAcceptance acceptance, String session, int n) throws Exception {
        CyclicBarrier barrier = new CyclicBarrier(n);
        List<Future<MessageAcceptance.Accepted>> futures = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(n)) {
            for (int i = 0; i < n; i++) {
                String text = "m" + i;
                futures.add(pool.submit(() -> {
                    barrier.await();
                    return acceptance.accept(
                            ApiKeyFilter.DEFAULT_TENANT, new MessageRequest(session, text, null, "sha-" + text));
                }));
            }
        }
        Set<Long> versions = new HashSet<>();
        for (Future<MessageAcceptance.Accepted> f : futures) {
            versions.add(f.get().version());
        }
        return versions;
    }

    @Test
    void a_batch_that_fails_or_loses_its_commit_ack_still_accepts_each_of_its_messages_exactly_once() throws Exception {
        Faults faults = new Faults();
        faults.failingSql = BatchAcceptance.BUMP_SESSIONS.substring(0, 20);
        faults.statementsToFail.set(1);
        MessageAcceptance acceptance = acceptance(faults);
        String s = "batchfail-" + UUID.randomUUID();
        assertEquals(LongStream.rangeClosed(1, 16).boxed().collect(Collectors.toSet()), together(acceptance, s, 16));
        assertEquals(1, faults.statementsFailed.get());
        assertEquals(16, stored(s));

        faults.commitsToLose.set(1);
        assertEquals(LongStream.rangeClosed(17, 32).boxed().collect(Collectors.toSet()), together(acceptance, s, 16));
        assertEquals(1, faults.lost.get());
        assertEquals(32, stored(s), "the lost commit's messages were found by their ids, none stored twice");
    }
}
