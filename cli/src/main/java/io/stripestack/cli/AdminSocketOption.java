package io.stripestack.cli;

import io.stripestack.targetserver.config.ConfigException;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.server.DefaultConfig;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** How a client command finds the running server's admin socket: --socket, or the one its config names. */
final class AdminSocketOption {
    @Option(names = "--socket", paramLabel = "PATH", description = "the server's admin socket")
    Path socket;

    @Option(names = {"-c", "--config"}, paramLabel = "FILE",
            description = "the server's configuration (default: the embedded default)")
    Path config;

    Path resolve() throws ConfigException {
        if (socket != null) {
            return socket;
        }
        StripestackConfig c = config != null ? ConfigLoader.load(config) : DefaultConfig.load();
        return c.server().adminSocket();
    }
}
