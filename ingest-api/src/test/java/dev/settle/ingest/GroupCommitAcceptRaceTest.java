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

        count = batches.count();
        total = batches.totalAmount();
        List<Callable<HttpResponse<String>>> calls = new ArrayList<>();
        for (int i = 0; i < 48; i++) {
            String s = i % 3 == 0 ? alone : sid("many");
            String text = "m" + i;
            calls.add(() -> post(s, text));
        }
        for (HttpResponse<String> r : together(calls)) {
            assertEquals(202, r.statusCode(), r.body());
        }
        assertEquals(48.0, batches.totalAmount() - total, "every post in exactly one batch");
        assertTrue(batches.count() - count < 48, (batches.count() - count) + " batches for 48 posts");
        assertTrue(batches.max() <= 8, "group-commit-max caps a batch: " + batches.max());
        assertExact(alone, 3 + 16);
    }
}
