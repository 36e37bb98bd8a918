package dev.settle.ingest.http;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Who may call a handler: every controller of this API names it, on the class or the method (the method wins).
 * {@link RouteAccess} enforces it on the handler that is about to run; a handler without it is refused.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
public @interface ApiAccess {
    Caller.Role value();
}
