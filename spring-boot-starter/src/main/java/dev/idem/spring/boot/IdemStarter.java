package dev.idem.spring.boot;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.ConfigException;
import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.util.ClassUtils;

/**
 * Builds the {@link IdemLifecycle} from what the application context has: the {@code idem.*} properties, the handler
 * beans, the meter registry, OpenTelemetry and the data source. Validates everything at once, as {@code idem check}
 * does, so the context fails with every problem in one {@link ConfigException}.
 */
final class IdemStarter {

    private static final Logger log = LoggerFactory.getLogger(IdemStarter.class);

    private static final String HANDLER_MISSING = "Missing required key pipelines.";

    private IdemStarter() {
    }

    /** What the context offers; any of the optional ones may be {@code null}. */
    record Beans(ConfigurableEnvironment environment, ListableBeanFactory beans, ClassLoader classLoader,
            MeterRegistry meterRegistry, OpenTelemetry openTelemetry, DataSource dataSource,
            List<IdemBuilderCustomizer> customizers) {
    }

    static IdemLifecycle create(Beans context) {
        ClassLoader loader = context.classLoader();
        // Plugins come from the application's class path, as the builder finds them; no isolated loaders.
        PluginRegistry plugins = PluginRegistry.discover(List.of(loader));
        SpringConfigTree tree = new SpringConfigTree(context.environment(), plugins);
        Map<String, Object> root = tree.tree();
        HandlerBeans handlerBeans = new HandlerBeans(context.beans());

        Idem.Builder builder = Idem.builder()
                .configYaml(tree.yaml(root))
                .env(Map.of())
                .pluginLoaders(List.of(loader))
                .handlerLoader(loader);
        handlerBeans.handlers().forEach(builder::handler);
        if (context.meterRegistry() != null) {
            builder.meterRegistry(context.meterRegistry());
        }
        if (context.openTelemetry() != null) {
            builder.openTelemetry(context.openTelemetry());
        }
        context.customizers().forEach(c -> c.customize(builder));

        Map<String, Boolean> declared = declaredPipelines(root);
        List<String> problems = handlerBeans.problems(declared);
        IdemConfig config;
        try {
            config = builder.validate().config();
        } catch (ConfigException e) {
            List<String> all = new ArrayList<>();
            for (String problem : e.problems()) {
                if (!reportedAsMissing(problem, declared, handlerBeans)) {
                    all.add(problem);
                }
            }
            all.addAll(problems);
            throw new ConfigException(all);
        }
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        bindTransactions(builder, config, handlerBeans.handlers(), context);
        return new IdemLifecycle(builder, config);
    }

    /** Transactional pipelines whose handler is a bean run it with the run's connection bound for the data source. */
    private static void bindTransactions(Idem.Builder builder, IdemConfig config, Map<String, MessageHandler> beans,
            Beans context) {
        List<String> transactional = config.pipelines().values().stream()
                .filter(PipelineConfig::transactional).map(PipelineConfig::name).filter(beans::containsKey).toList();
        if (transactional.isEmpty()) {
            return;
        }
        if (context.dataSource() == null
                || !ClassUtils.isPresent("org.springframework.jdbc.datasource.ConnectionHolder", context.classLoader())) {
            log.info("Transactional pipelines {} run without Spring's transaction binding: there is no single"
                    + " DataSource bean and spring-jdbc; handlers reach the transaction through"
                    + " context.transaction(Connection.class)", transactional);
            return;
        }
        TransactionBinding binding = new TransactionBinding(context.dataSource());
        for (String pipeline : transactional) {
            builder.handler(pipeline, binding.wrap(beans.get(pipeline)));
        }
        log.info("Transactional pipelines {}: the handler's transaction is Spring's for the application's DataSource",
                transactional);
    }

    /** Each pipeline under {@code idem.pipelines} with whether it names a {@code handler} class. */
    private static Map<String, Boolean> declaredPipelines(Map<String, Object> root) {
        Map<String, Boolean> declared = new LinkedHashMap<>();
        if (root.get("pipelines") instanceof Map<?, ?> pipelines) {
            pipelines.forEach((name, section) -> declared.put(String.valueOf(name),
                    section instanceof Map<?, ?> m && m.get("handler") != null));
        }
        return declared;
    }

    /** Idem's own "handler missing" message, for a pipeline whose missing handler bean was already reported. */
    private static boolean reportedAsMissing(String problem, Map<String, Boolean> declared, HandlerBeans beans) {
        for (Map.Entry<String, Boolean> p : declared.entrySet()) {
            if (!p.getValue() && !beans.handlers().containsKey(p.getKey())
                    && problem.startsWith(HANDLER_MISSING + p.getKey() + ".handler")) {
                return true;
            }
        }
        return false;
    }
}
