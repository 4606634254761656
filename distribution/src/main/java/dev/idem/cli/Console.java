package dev.idem.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.runtime.IdemRuntime;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.RuntimeSettings;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.Secret;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.http.HttpCookie;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operator's console under {@value #PREFIX} on the ops port ({@link OpsServer}): one page with its script and
 * styles (from this JAR, and uPlot's from its WebJar), a login form, and the JSON API under {@value #API} that the
 * page and operators' scripts use. Who may do what is {@link ConsoleAccess}'s; what the API answers is
 * {@link ConsoleApi}'s. Every action is logged on {@code dev.idem.cli.Console} at info with the remote address and
 * what it did; a refused action at warn.
 *
 * <p>Every answer carries {@code Cache-Control: no-store} (but the static files), {@code X-Content-Type-Options:
 * nosniff}, {@code Referrer-Policy: same-origin} and a {@code Content-Security-Policy} that allows only this origin's
 * scripts, styles and requests, and no framing. Thread-safe.
 */
final class Console implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Console.class);

    static final String PREFIX = "/console";
    static final String API = PREFIX + "/api";
    private static final String LOGIN = PREFIX + "/login";
    private static final String LOGOUT = PREFIX + "/logout";
    static final String REPLAY = API + "/dead-letters/replay";
    private static final String ASSETS = PREFIX + "/assets/";
    /** The largest request body read (a release's or a replay's JSON, the login form). */
    private static final int MAX_BODY = 64 * 1024;
    private static final String UPLOT = "META-INF/resources/webjars/uplot/1.6.30/dist/";
    private static final String OWN = "dev/idem/cli/console/";

    /** The static files: path under {@value #ASSETS} to class-path resource and content type. */
    private static final Map<String, String[]> FILES = Map.of(
            "console.js", new String[] {OWN + "console.js", "text/javascript; charset=utf-8"},
            "console.css", new String[] {OWN + "console.css", "text/css; charset=utf-8"},
            "uPlot.iife.min.js", new String[] {UPLOT + "uPlot.iife.min.js", "text/javascript; charset=utf-8"},
            "uPlot.min.css", new String[] {UPLOT + "uPlot.min.css", "text/css; charset=utf-8"});

    private static final ObjectMapper JSON = new ObjectMapper();

    private final ConsoleApi api;
    private final ConsoleAccess access;
    /** The dead-letter view; {@code null} where none is served. */
    private final ConsoleDeadLetters deadLetters;
    private final Map<String, byte[]> cache = new ConcurrentHashMap<>();
    /** Samples the figures every {@link ConsoleApi#SAMPLE_EVERY} from {@link #start}; {@code null} before. */
    private ScheduledExecutorService sampler;

    Console(ConsoleApi api, ConsoleAccess access) {
        this(api, access, null);
    }

    /** @param deadLetters the dead-letter view, closed with the console; or {@code null} for none */
    Console(ConsoleApi api, ConsoleAccess access, ConsoleDeadLetters deadLetters) {
        this.api = api;
        this.access = access;
        this.deadLetters = deadLetters;
    }

    /**
     * The console of {@code idem run}: the runtime's figures and store, the configured token and host, and the
     * dead letters through an adapter of the configured broker of its own, as {@code idem dlq replay} opens it.
     */
    static Console of(IdemRuntime runtime, RuntimeSettings settings, PluginRegistry plugins) {
        Secret token = settings.console().token();
        IdemConfig config = runtime.config();
        ConsoleDeadLetters deadLetters = new ConsoleDeadLetters(plugins, config,
                () -> plugins.createBroker(config.broker().type(), config.broker().config()),
                settings.console().showPayloads());
        return new Console(new ConsoleApi(runtime),
                new ConsoleAccess(token, settings.http().loopback(), System::nanoTime), deadLetters);
    }

    /** Starts keeping the last minutes of figures (one daemon thread, {@code idem-console-sampler}). */
    synchronized void start() {
        if (sampler != null) {
            return;
        }
        sampler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "idem-console-sampler");
            t.setDaemon(true);
            return t;
        });
        sampler.scheduleAtFixedRate(() -> {
            try {
                api.sample();
            } catch (RuntimeException e) {
                log.debug("The console could not sample the figures", e); // the next sample tries again
            }
        }, 0, ConsoleApi.SAMPLE_EVERY.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public synchronized void close() {
        if (sampler != null) {
            sampler.shutdownNow();
        }
        if (deadLetters != null) {
            deadLetters.close();
        }
    }

    static boolean serves(String path) {
        return path.equals(PREFIX) || path.startsWith(PREFIX + "/");
    }

    /** Answers a request whose path {@link #serves}. */
    boolean handle(Request request, Response response, Callback callback) {
        String path = Request.getPathInContext(request);
        String method = request.getMethod();
        secure(response);
        try {
            if (path.startsWith(ASSETS)) {
                return asset(path.substring(ASSETS.length()), method, response, callback);
            }
            if (path.equals(LOGIN)) {
                return login(request, response, callback);
            }
            String sessionId = cookie(request);
            ConsoleAccess.Proof proof = access.proof(request.getHeaders().get(HttpHeader.AUTHORIZATION), sessionId);
            boolean isApi = path.startsWith(API + "/");
            if (proof == ConsoleAccess.Proof.NONE && !access.openForReading()) {
                if (isApi || !method.equals("GET")) {
                    response.getHeaders().put(HttpHeader.WWW_AUTHENTICATE, "Bearer realm=\"idem-console\"");
                    return json(response, callback, 401, error("The console needs its token: send"
                            + " 'Authorization: Bearer <runtime.console.token>', or log in at " + LOGIN));
                }
                return redirect(response, callback, LOGIN);
            }
            if (method.equals("POST")) {
                return action(path, request, response, callback, proof, sessionId);
            }
            if (!method.equals("GET") && !method.equals("HEAD")) {
                response.getHeaders().put(HttpHeader.ALLOW, "GET, HEAD, POST");
                return json(response, callback, 405, error("Method " + method + " not allowed"));
            }
            if (path.equals(PREFIX)) {
                return redirect(response, callback, PREFIX + "/");
            }
            if (path.equals(PREFIX + "/")) {
                return page(response, callback);
            }
            Fields query = Request.extractQueryParameters(request, StandardCharsets.UTF_8);
            return switch (path) {
                case API + "/session" -> json(response, callback, 200, session(proof, sessionId));
                case API + "/pipelines" -> json(response, callback, 200, api.pipelines());
                case API + "/metrics" -> json(response, callback, 200, api.metrics());
                case API + "/history" -> json(response, callback, 200, api.history());
                case API + "/health" -> json(response, callback, 200, api.health());
                case API + "/keys" -> json(response, callback, 200, api.key(query.getValue("pipeline"),
                        query.getValue("id")));
                case API + "/dead-letters" -> json(response, callback, 200, deadLetters().list(
                        query.getValue("pipeline"), "true".equals(query.getValue("full"))));
                default -> json(response, callback, 404, error("Not found: " + path + ". See the README's"
                        + " \"Operator's console\" for the API"));
            };
        } catch (ConsoleApi.Refused e) {
            return json(response, callback, e.status, error(e.getMessage()));
        } catch (RuntimeException e) {
            log.warn("The console failed to answer {} {}", method, path, e);
            return json(response, callback, 503, error("Failed: " + e.getClass().getSimpleName() + ": "
                    + Secret.maskCredentials(String.valueOf(e.getMessage()))));
        }
    }

    /** A POST: the release, or the end of a session. */
    private boolean action(String path, Request request, Response response, Callback callback,
            ConsoleAccess.Proof proof, String sessionId) {
        String who = Request.getRemoteAddr(request);
        if (!path.equals(API + "/keys/release") && !path.equals(REPLAY) && !path.equals(LOGOUT)) {
            return json(response, callback, 404, error("Not found: POST " + path));
        }
        String refusal = null;
        if (!access.tokenConfigured()) {
            refusal = "Actions need runtime.console.token, and none is configured: the console only shows";
        } else if (proof == ConsoleAccess.Proof.NONE) {
            refusal = "Actions need the token: 'Authorization: Bearer <runtime.console.token>', or log in at " + LOGIN;
        } else if (proof == ConsoleAccess.Proof.SESSION
                && !access.csrfMatches(sessionId, request.getHeaders().get(ConsoleAccess.CSRF_HEADER))) {
            refusal = "The request lacks the session's CSRF token (header " + ConsoleAccess.CSRF_HEADER + "): reload the console";
        } else if (!sameOrigin(request)) {
            refusal = "The request comes from another origin (" + request.getHeaders().get(HttpHeader.ORIGIN) + ")";
        }
        if (refusal != null) {
            log.warn("Console: refused POST {} from {}: {}", path, who, refusal);
            return json(response, callback, proof == ConsoleAccess.Proof.NONE ? 401 : 403, error(refusal));
        }
        if (path.equals(LOGOUT)) {
            access.close(sessionId);
            Response.addCookie(response, cookie("", 0, request.isSecure()));
            log.info("Console: {} logged out", who);
            return json(response, callback, 200, Map.of("loggedOut", true));
        }
        JsonNode body;
        try {
            body = JSON.readTree(body(request));
        } catch (JsonProcessingException e) {
            return json(response, callback, 400, error("The body must be JSON: {\"pipeline\": ..., "
                    + (path.equals(REPLAY) ? "\"ids\": [...]}" : "\"id\": ...}")));
        }
        if (path.equals(REPLAY)) {
            return replay(body, who, proof, response, callback);
        }
        String pipeline = body == null ? null : body.path("pipeline").asText(null);
        String id = body == null ? null : body.path("id").asText(null);
        Map<String, Object> answer;
        try {
            answer = api.release(pipeline, id);
        } catch (ConsoleApi.Refused e) {
            log.warn("Console: {} ({}) asked to release key {} of pipeline {}: refused, {}", who, by(proof),
                    StoreCommand.escape(String.valueOf(id)), StoreCommand.escape(String.valueOf(pipeline)),
                    e.getMessage());
            throw e;
        }
        log.info("Console: {} ({}) released key {} of pipeline {}: {}", who, by(proof), StoreCommand.escape(id),
                StoreCommand.escape(pipeline), Boolean.TRUE.equals(answer.get("released")) ? "removed, it was "
                        + answer.get("was") : "nothing to release, it was absent");
        return json(response, callback, 200, answer);
    }

    /** A replay of dead letters: some by their IDs, or one group by its cause (and exception class). */
    private boolean replay(JsonNode body, String who, ConsoleAccess.Proof proof, Response response,
            Callback callback) {
        String pipeline = body == null ? null : body.path("pipeline").asText(null);
        List<String> ids = null;
        if (body != null && body.has("ids")) {
            if (!body.get("ids").isArray()) {
                return json(response, callback, 400, error("\"ids\" must be a list of dead-letter IDs"));
            }
            ids = new ArrayList<>();
            for (JsonNode id : body.get("ids")) {
                ids.add(id.asText());
            }
        }
        String cause = body == null ? null : body.path("cause").asText(null);
        String exception = body == null ? null : body.path("exception").asText(null);
        String what = ids != null ? ids.size() + (ids.size() == 1 ? " dead letter " + StoreCommand.escape(ids.get(0))
                : " dead letters") : "the group " + StoreCommand.escape(String.valueOf(cause))
                + (exception == null ? "" : " " + StoreCommand.escape(exception));
        log.info("Console: {} ({}) replays {} of pipeline {}", who, by(proof), what,
                StoreCommand.escape(String.valueOf(pipeline)));
        Map<String, Object> answer;
        try {
            answer = deadLetters().replay(pipeline, ids, cause, exception);
        } catch (ConsoleApi.Refused e) {
            log.warn("Console: {} ({}) asked to replay {} of pipeline {}: refused, {}", who, by(proof), what,
                    StoreCommand.escape(String.valueOf(pipeline)), e.getMessage());
            throw e;
        }
        log.info("Console: {} ({}) replayed {} of pipeline {}: {} moved, {} skipped, {} failed{}", who, by(proof),
                what, StoreCommand.escape(pipeline), answer.get("moved"), answer.get("skipped"), answer.get("failed"),
                Boolean.TRUE.equals(answer.get("incomplete")) ? ", incomplete" : "");
        return json(response, callback, 200, answer);
    }

    private ConsoleDeadLetters deadLetters() {
        if (deadLetters == null) {
            throw new ConsoleApi.Refused(501, "This console shows no dead letters");
        }
        return deadLetters;
    }

    private static String by(ConsoleAccess.Proof proof) {
        return proof == ConsoleAccess.Proof.BEARER ? "bearer token" : "console session";
    }

    /** An {@code Origin} header, when a browser sends one, must name this server. */
    private static boolean sameOrigin(Request request) {
        String origin = request.getHeaders().get(HttpHeader.ORIGIN);
        if (origin == null) {
            return true;
        }
        String host = request.getHeaders().get(HttpHeader.HOST);
        try {
            URI o = URI.create(origin);
            return host != null && o.getRawAuthority() != null && o.getRawAuthority().equalsIgnoreCase(host);
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private Map<String, Object> session(ConsoleAccess.Proof proof, String sessionId) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("authenticated", proof != ConsoleAccess.Proof.NONE);
        m.put("tokenConfigured", access.tokenConfigured());
        m.put("actions", access.tokenConfigured() && proof != ConsoleAccess.Proof.NONE);
        if (proof == ConsoleAccess.Proof.SESSION) {
            m.put("csrf", access.csrf(sessionId));
        }
        return m;
    }

    /** {@code GET} the form; {@code POST} it: the token opens a session, set as an HttpOnly, SameSite cookie. */
    private boolean login(Request request, Response response, Callback callback) {
        String who = Request.getRemoteAddr(request);
        if (request.getMethod().equals("GET") || request.getMethod().equals("HEAD")) {
            return html(response, callback, 200, loginPage(null));
        }
        if (!request.getMethod().equals("POST")) {
            response.getHeaders().put(HttpHeader.ALLOW, "GET, HEAD, POST");
            return html(response, callback, 405, loginPage("Use the form."));
        }
        if (!access.tokenConfigured()) {
            return html(response, callback, 403, loginPage("No runtime.console.token is configured: nobody can"
                    + " log in. Set it (e.g. ${IDEM_CONSOLE_TOKEN}) and restart."));
        }
        if (!sameOrigin(request)) {
            log.warn("Console: refused a login from {}: another origin", who);
            return html(response, callback, 403, loginPage("The form was sent from another origin."));
        }
        String token = form(body(request)).get("token");
        if (!access.tokenMatches(token)) {
            log.warn("Console: failed login from {}", who);
            return html(response, callback, 401, loginPage("Wrong token."));
        }
        String id = access.open();
        Response.addCookie(response, cookie(id, ConsoleAccess.SESSION_LIFETIME.toSeconds(), request.isSecure()));
        log.info("Console: {} logged in", who);
        return redirect(response, callback, PREFIX + "/");
    }

    private static HttpCookie cookie(String value, long maxAgeSeconds, boolean secure) {
        return HttpCookie.build(ConsoleAccess.COOKIE, value).path(PREFIX).httpOnly(true).secure(secure)
                .sameSite(HttpCookie.SameSite.STRICT).maxAge(maxAgeSeconds).build();
    }

    private static String cookie(Request request) {
        List<HttpCookie> cookies = Request.getCookies(request);
        for (HttpCookie c : cookies) {
            if (c.getName().equals(ConsoleAccess.COOKIE)) {
                return c.getValue();
            }
        }
        return null;
    }

    private static Map<String, String> form(String body) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (String pair : body.split("&")) {
            int eq = pair.indexOf('=');
            if (eq > 0) {
                fields.putIfAbsent(URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
                        URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        return fields;
    }

    /** The request's body as UTF-8, at most {@value #MAX_BODY} bytes. */
    private static String body(Request request) {
        long length = request.getLength();
        if (length > MAX_BODY) {
            throw new ConsoleApi.Refused(413, "The body is larger than " + MAX_BODY + " bytes");
        }
        try {
            String body = Content.Source.asString(request, StandardCharsets.UTF_8);
            if (body.length() > MAX_BODY) {
                throw new ConsoleApi.Refused(413, "The body is larger than " + MAX_BODY + " bytes");
            }
            return body;
        } catch (IOException e) {
            throw new ConsoleApi.Refused(400, "The body could not be read: " + e.getMessage());
        }
    }

    private boolean page(Response response, Callback callback) {
        return html(response, callback, 200, new String(resource(OWN + "index.html"), StandardCharsets.UTF_8));
    }

    private static String loginPage(String problem) {
        return """
                <!DOCTYPE html>
                <html lang="en"><head><meta charset="utf-8"><title>Idem console: log in</title>
                <link rel="icon" href="data:,"><link rel="stylesheet" href="/console/assets/console.css"></head>
                <body><main class="login"><h1>Idem console</h1>
                %s<form method="post" action="/console/login">
                <label>Token (runtime.console.token) <input type="password" name="token" id="token"
                autocomplete="current-password" required></label>
                <button type="submit" id="login">Log in</button></form></main></body></html>
                """.formatted(problem == null ? "" : "<p class=\"problem\">" + problem + "</p>");
    }

    private boolean asset(String name, String method, Response response, Callback callback) {
        String[] file = FILES.get(name);
        if (file == null) {
            return json(response, callback, 404, error("Not found"));
        }
        if (!method.equals("GET") && !method.equals("HEAD")) {
            response.getHeaders().put(HttpHeader.ALLOW, "GET, HEAD");
            return json(response, callback, 405, error("Method " + method + " not allowed"));
        }
        response.setStatus(200);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, file[1]);
        response.getHeaders().put(HttpHeader.CACHE_CONTROL, "max-age=300");
        response.write(true, ByteBuffer.wrap(resource(file[0])), callback);
        return true;
    }

    private byte[] resource(String name) {
        return cache.computeIfAbsent(name, n -> {
            try (InputStream in = Console.class.getClassLoader().getResourceAsStream(n)) {
                if (in == null) {
                    throw new IllegalStateException("The console's file " + n + " is not on the class path");
                }
                return in.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    private static void secure(Response response) {
        response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-store");
        response.getHeaders().put("X-Content-Type-Options", "nosniff");
        // Not no-referrer: under it a browser sends "Origin: null" with its own forms and fetches, which sameOrigin refuses.
        response.getHeaders().put("Referrer-Policy", "same-origin");
        response.getHeaders().put("X-Frame-Options", "DENY");
        response.getHeaders().put("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self';"
                + " img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none';"
                + " base-uri 'none'");
    }

    private static Map<String, Object> error(String message) {
        return Map.of("error", message);
    }

    private static boolean json(Response response, Callback callback, int status, Object body) {
        String text;
        try {
            text = JSON.writeValueAsString(body);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        response.setStatus(status);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json; charset=utf-8");
        Content.Sink.write(response, true, text + "\n", callback);
        return true;
    }

    private static boolean html(Response response, Callback callback, int status, String body) {
        response.setStatus(status);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/html; charset=utf-8");
        Content.Sink.write(response, true, body, callback);
        return true;
    }

    private static boolean redirect(Response response, Callback callback, String location) {
        response.setStatus(303);
        response.getHeaders().put(HttpHeader.LOCATION, location);
        Content.Sink.write(response, true, "", callback);
        return true;
    }
}
