package dev.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SecretTest {

    @Test
    void masksThePasswordOfAUserInfo() {
        assertThat(Secret.maskCredentials("amqp://user:secret@rabbit:5672/%2F"))
                .isEqualTo("amqp://user:******@rabbit:5672/%2F");
        assertThat(Secret.maskCredentials("redis://:secret@redis:6379/0")).isEqualTo("redis://:******@redis:6379/0");
        assertThat(Secret.maskCredentials("failover:(tcp://admin:pa55@a:61616,tcp://admin:pa55@b:61616)"))
                .isEqualTo("failover:(tcp://admin:******@a:61616,tcp://admin:******@b:61616)");
    }

    @Test
    void masksARedisUserInfoThatIsAPasswordAlone() {
        assertThat(Secret.maskCredentials("rediss://secret@redis:6380")).isEqualTo("rediss://******@redis:6380");
        assertThat(Secret.maskCredentials("redis-sentinel://secret@s1:26379,s2:26379?sentinelMasterId=main"))
                .isEqualTo("redis-sentinel://******@s1:26379,s2:26379?sentinelMasterId=main");
        assertThat(Secret.maskCredentials("amqp://guest@rabbit")).as("a user name alone is no secret")
                .isEqualTo("amqp://guest@rabbit");
    }

    @Test
    void masksPasswordParametersOfUrls() {
        assertThat(Secret.maskCredentials("jdbc:postgresql://db/test?user=app&password=secret&ssl=true"))
                .isEqualTo("jdbc:postgresql://db/test?user=app&password=******&ssl=true");
        assertThat(Secret.maskCredentials("jdbc:sqlserver://db;user=app;Password=secret;encrypt=true"))
                .isEqualTo("jdbc:sqlserver://db;user=app;Password=******;encrypt=true");
    }

    @Test
    void masksThePasswordOfALibpqConnectionString() {
        assertThat(Secret.maskCredentials("host=db port=5432 password=secret dbname=app"))
                .isEqualTo("host=db port=5432 password=****** dbname=app");
        assertThat(Secret.maskCredentials("password=secret host=db")).isEqualTo("password=****** host=db");
        assertThat(Secret.maskCredentials("host=db password = 'it\\'s a secret' user=app"))
                .isEqualTo("host=db password = ****** user=app");
        assertThat(Secret.maskCredentials("host=db\tsslpassword=secret\nsslkey=/etc/key.pem"))
                .isEqualTo("host=db\tsslpassword=******\nsslkey=/etc/key.pem");
        assertThat(Secret.maskCredentials("user=app passphrase=secret")).isEqualTo("user=app passphrase=******");
    }

    @Test
    void leavesTextWithoutCredentialsAlone() {
        String plain = "jdbc:h2:file:./data/idem-store;WRITE_DELAY=0";
        assertThat(Secret.maskCredentials(plain)).isSameAs(plain);
        assertThat(Secret.maskCredentials("orders")).isEqualTo("orders");
        assertThat(Secret.maskCredentials(null)).isNull();
        assertThat(new Secret("x").toString()).isEqualTo("******");
    }
}
