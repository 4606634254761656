package dev.idem.spring.boot;

import dev.idem.api.MessageHandler;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.ListableBeanFactory;

/**
 * The beans annotated {@link IdemHandler}, by pipeline, and what is wrong with them: an annotated bean that is not a
 * handler, two beans for one pipeline, a declared pipeline with neither a bean nor a {@code handler} class.
 */
final class HandlerBeans {

    private final Map<String, MessageHandler> byPipeline = new LinkedHashMap<>();
    private final Map<String, List<String>> beanNames = new LinkedHashMap<>();
    private final List<String> problems = new ArrayList<>();

    HandlerBeans(ListableBeanFactory beans) {
        for (String name : beans.getBeanNamesForAnnotation(IdemHandler.class)) {
            IdemHandler annotation = beans.findAnnotationOnBean(name, IdemHandler.class);
            Class<?> type = beans.getType(name);
            if (annotation == null) {
                continue;
            }
            if (type == null || !MessageHandler.class.isAssignableFrom(type)) {
                problems.add("Bean '" + name + "' (" + (type == null ? "of unknown type" : type.getName())
                        + ") is annotated @IdemHandler(\"" + annotation.value() + "\") but is not a handler: implement "
                        + MessageHandler.class.getName() + " (or TypedHandler, BatchHandler)");
                continue;
            }
            beanNames.computeIfAbsent(annotation.value(), p -> new ArrayList<>()).add(name + " (" + type.getName() + ")");
            byPipeline.putIfAbsent(annotation.value(), beans.getBean(name, MessageHandler.class));
        }
        beanNames.forEach((pipeline, names) -> {
            if (names.size() > 1) {
                problems.add("Pipeline '" + pipeline + "' has " + names.size() + " handler beans, " + names
                        + "; annotate exactly one with @IdemHandler(\"" + pipeline + "\")");
            }
        });
    }

    /** One handler per pipeline that has a bean. */
    Map<String, MessageHandler> handlers() {
        return byPipeline;
    }

    /**
     * The problems found, with one for each pipeline of {@code declared} that has neither a bean nor a class.
     *
     * @param declared each declared pipeline with whether it names a {@code handler} class
     */
    List<String> problems(Map<String, Boolean> declared) {
        List<String> all = new ArrayList<>(problems);
        declared.forEach((pipeline, namesClass) -> {
            if (!namesClass && !beanNames.containsKey(pipeline)) {
                all.add("Pipeline '" + pipeline + "' has no handler: annotate a bean implementing "
                        + MessageHandler.class.getName() + " with @IdemHandler(\"" + pipeline + "\"), or name a"
                        + " class in idem.pipelines." + pipeline + ".handler");
            }
        });
        return all;
    }
}
