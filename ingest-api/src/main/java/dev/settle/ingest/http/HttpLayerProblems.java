package dev.settle.ingest.http;

import org.apache.catalina.Container;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.core.StandardHost;
import org.apache.catalina.valves.ErrorReportValve;
import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Requests Tomcat refuses before any application code runs (an encoded slash or NUL in the path, broken
 * percent-encoding, a header over the size limit) are answered as RFC 9457 problem+json too, not as Tomcat's
 * HTML error page: the host's error report valve is replaced by {@link ProblemValve one} that writes the problem.
 * Nothing was read or stored for such a request.
 */
@Component
public class HttpLayerProblems implements WebServerFactoryCustomizer<TomcatServletWebServerFactory> {

    @Override
    public void customize(TomcatServletWebServerFactory factory) {
        factory.addContextCustomizers(context -> {
            Container parent = context.getParent();
            if (parent instanceof StandardHost host) {
                host.setErrorReportValveClass(ProblemValve.class.getName());
                for (org.apache.catalina.Valve v : host.getPipeline().getValves()) {
                    if (v instanceof ErrorReportValve && !(v instanceof ProblemValve)) {
                        host.getPipeline().removeValve(v);
                    }
                }
            }
        });
    }

    /** Tomcat's error report, as problem+json; only for responses no application code has written. */
    public static class ProblemValve extends ErrorReportValve {
        private static final JsonMapper JSON = JsonMapper.builder().build();

        @Override
        protected void report(Request request, Response response, Throwable throwable) {
            int status = response.getStatus();
            if (status < 400 || response.getContentWritten() > 0 || !response.setErrorReported()) {
                return;
            }
            Map<String, Object> problem = new LinkedHashMap<>();
            problem.put("type", "about:blank");
            HttpStatus known = HttpStatus.resolve(status);
            problem.put("title", known == null ? "Error" : known.getReasonPhrase());
            problem.put("status", status);
            problem.put(
                    "detail",
                    status < 500
                            ? "the HTTP layer refused this request (malformed request line, path or headers); nothing was read or stored"
                            : "the request failed; nothing was accepted");
            try {
                response.setContentType("application/problem+json");
                response.setCharacterEncoding(StandardCharsets.UTF_8.name());
                Writer writer = response.getReporter();
                if (writer != null) {
                    writer.write(JSON.writeValueAsString(problem));
                    response.finishResponse();
                }
            } catch (IOException | IllegalStateException e) {
                // the client is gone, or the response was committed meanwhile: nothing more to say
            }
        }
    }
}
