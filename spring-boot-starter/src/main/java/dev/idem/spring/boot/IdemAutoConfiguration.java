package dev.idem.spring.boot;

import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.actuate.health.HealthContributor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.ConfigurableEnvironment;

/**
 * Runs Idem in a Spring Boot application: the {@code idem.*} properties are its configuration (the keys of
 * {@code conf/idem.yaml}), beans annotated {@link IdemHandler} its handlers, and an {@link IdemLifecycle} starts it
 * with the context and stops it gracefully with it. The runtime's meters go to the application's
 * {@link MeterRegistry} and its traces to the application's {@link OpenTelemetry}, when it has them; with Actuator,
 * the {@code idem} health contributor has one indicator per pipeline. {@code idem.enabled=false} turns it all off.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.opentelemetry.OpenTelemetryAutoConfiguration"})
@ConditionalOnProperty(prefix = SpringConfigTree.PREFIX, name = SpringConfigTree.ENABLED, havingValue = "true",
        matchIfMissing = true)
public class IdemAutoConfiguration {

    /** Validates Idem's configuration and the handler beans now; the runtime starts with the context. */
    @Bean
    @ConditionalOnMissingBean
    public IdemLifecycle idemLifecycle(ConfigurableEnvironment environment, ConfigurableListableBeanFactory beans,
            ObjectProvider<MeterRegistry> meterRegistry, ObjectProvider<OpenTelemetry> openTelemetry,
            ObjectProvider<DataSource> dataSource, ObjectProvider<IdemBuilderCustomizer> customizers) {
        ClassLoader loader = beans.getBeanClassLoader() != null ? beans.getBeanClassLoader()
                : IdemAutoConfiguration.class.getClassLoader();
        return IdemStarter.create(new IdemStarter.Beans(environment, beans, loader, meterRegistry.getIfUnique(),
                openTelemetry.getIfUnique(), dataSource.getIfUnique(), customizers.orderedStream().toList()));
    }

    /** Actuator's {@code idem} health contributor, one indicator per pipeline. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(HealthContributor.class)
    static class Health {

        @Bean
        @ConditionalOnMissingBean(name = "idemHealthContributor")
        HealthContributor idemHealthContributor(IdemLifecycle lifecycle) {
            return IdemHealth.contributor(lifecycle);
        }
    }
}
