package io.stripestack.targetserver.server;

import io.stripestack.targetserver.config.ConfigException;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/** The embedded default configuration: conf/default.yaml, packaged in the jar, data under ./data. */
public final class DefaultConfig {
    public static final String RESOURCE = "/conf/default.yaml";

    private DefaultConfig() {
    }

    public static StripestackConfig load() throws ConfigException {
        return ConfigLoader.parse("conf/default.yaml (embedded)", text(), Path.of("").toAbsolutePath());
    }

    /** The embedded file's text (saveconfig starts from it when the server runs without a file of its own). */
    public static String text() throws ConfigException {
        try (InputStream in = DefaultConfig.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new ConfigException(RESOURCE + ": the embedded default configuration is missing from the jar;"
                        + " rebuild with mvn package or pass --config conf/default.yaml");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ConfigException(RESOURCE + ": cannot read the embedded default configuration: " + e.getMessage(), e);
        }
    }
}
