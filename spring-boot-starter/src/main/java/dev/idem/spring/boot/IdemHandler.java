package dev.idem.spring.boot;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Binds a bean to the pipeline it names: {@code @IdemHandler("orders")} on a {@code @Component} class (or a
 * {@code @Bean} method) that implements {@link dev.idem.api.MessageHandler}, {@link dev.idem.api.TypedHandler} or
 * {@link dev.idem.api.BatchHandler}. The pipeline is declared under {@code idem.pipelines.<name>}; its
 * {@code handler} key is then left out.
 *
 * <p>Each declared pipeline needs exactly one handler: one such bean, or a class named in
 * {@code idem.pipelines.<name>.handler} (created by the runtime with its no-arg constructor, not a bean). A pipeline
 * with neither, two beans for one pipeline, or an annotated bean that is not a handler fail the application context
 * at startup, with every other configuration problem. A handler bean that is not annotated is not bound.
 *
 * <p>The bean is the application's: Spring creates, initialises and destroys it; the runtime only calls it, from
 * its worker threads (so it must be thread-safe when the pipeline's {@code concurrency} is above 1), and never
 * passes it {@code handler-settings}.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
public @interface IdemHandler {

    /** The pipeline's name, as under {@code idem.pipelines}. */
    String value();
}
