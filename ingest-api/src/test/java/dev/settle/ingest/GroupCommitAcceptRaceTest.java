package dev.settle.ingest;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link AcceptRaceTest} with group commit on (at most 8 per batch); and the posts of a race really share commits. */
class GroupCommitAcceptRaceTest extends AcceptRaceTest {
    @BeforeAll
    static void start() {
        app = new IngestApp("race_gc", props(true));
    }

    /**
     * No batch failed: a batch that fails is accepted message by message, which would hide a wrong decision of the
     * batch (two messages given one version, one key stored twice) behind correct answers.
     */
    @AfterEach
    void no_batch_failed() {
        assertEquals(0.0, app.failedBatches());
    }

    @Test
    void posts_that_arrive_together_share_commits_and_a_post_alone_commits_alone() throws Exception {
        DistributionSummary batches = app.context
                .getBean(MeterRegistry.class)
                .get("settle.accept.batch.size")
                .summary();
        long count = batches.count();
        double total = batches.totalAmount();
        String alone = sid("alone");
        for (int i = 1; i <= 3; i++) {
            assertEquals(202, post(alone, "alone " + i).statusCode());
        }
        assertEquals(3, batches.count() - count, "one batch per post that arrives alone");
        assertEquals(3.0, batches.totalAmount() - total);

        // 48 posts released at once by a barrier; on a busy machine their threads may still reach the queue one by
        // one (each then finds a free lane and writes alone), so the race is run up to five rounds: in at least one,
        // posts that arrived together must have shared a commit. A third of each round's posts go to one session
        // (the first round's: the one that posted alone; later rounds' a new one each, under the unanswered limit)
        List<Long> batchesPerRound = new ArrayList<>();
        java.util.Map<String, Integer> shared = new java.util.LinkedHashMap<>();
        while (shared.size() < 5 && (batchesPerRound.isEmpty() || batchesPerRound.getLast() == 48)) {
            String one = shared.isEmpty() ? alone : sid("shared");
            shared.put(one, shared.isEmpty() ? 3 + 16 : 16);
            count = batches.count();
            total = batches.totalAmount();
            List<Callable<HttpResponse<String>>> calls = new ArrayList<>();
            for (int i = 0; i < 48; i++) {
                String s = i % 3 == 0 ? one : sid("many");
                String text = "r" + shared.size() + "m" + i;
                calls.add(() -> post(s, text));
            }
            for (HttpResponse<String> r : together(calls)) {
                assertEquals(202, r.statusCode(), r.body());
            }
            assertEquals(48.0, batches.totalAmount() - total, "every post in exactly one batch");
            batchesPerRound.add(batches.count() - count);
        }
        assertTrue(batchesPerRound.getLast() < 48, batchesPerRound + " batches for 48 posts, by round");
        assertTrue(batches.max() <= 8, "group-commit-max caps a batch: " + batches.max());
        shared.forEach(AcceptRaceTest::assertExact);
    }
}
