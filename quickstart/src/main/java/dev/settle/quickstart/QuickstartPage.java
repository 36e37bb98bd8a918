package dev.settle.quickstart;

import java.util.HashMap;
import java.util.Map;

/**
 * The chat page: static files under {@value #LOCATION} that only the quickstart's ingest API serves, at
 * {@code /} and beside it ({@code /chat.js}, ...). The ingest API alone serves no static resource
 * ({@code spring.web.resources.add-mappings=false}); the workers' HTTP ports serve only their default static
 * locations, where the page is not.
 */
public final class QuickstartPage {
    /** Where the page's files are on the classpath: none of Spring Boot's default static locations. */
    static final String LOCATION = "classpath:/settle-page/";
    /** The page's entry: Spring's welcome page, served at {@code /}. */
    static final String INDEX = LOCATION + "index.html";

    private QuickstartPage() {}

    /** {@code extra} for the ingest API's start, plus what makes it serve the page. */
    public static Map<String, Object> served(Map<String, Object> extra) {
        Map<String, Object> props = new HashMap<>(extra);
        props.put("spring.web.resources.add-mappings", "true");
        props.put("spring.web.resources.static-locations", LOCATION);
        return props;
    }
}
