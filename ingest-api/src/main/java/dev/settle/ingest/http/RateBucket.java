package dev.settle.ingest.http;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Which of its tenant's request-rate buckets a handler draws from ({@link TenantRateLimiter}), on the method or the
 * class (the method wins); a handler without it draws from {@link Bucket#REQUESTS}. {@link RouteAccess} takes the
 * token on the handler about to run, so the bucket follows the handler, not a spelling of its path.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
public @interface RateBucket {
    Bucket value();

    enum Bucket {
        /** Every request of a tenant but its typing signals. */
        REQUESTS("request rate"),
        /**
         * Typing signals: a page sends one every few seconds per typist, so many typists would otherwise spend the
         * tokens their messages need.
         */
        TYPING("typing-signal rate");

        final String what;

        Bucket(String what) {
            this.what = what;
        }
    }
}
