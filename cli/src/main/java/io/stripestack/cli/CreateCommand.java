package io.stripestack.cli;

import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.server.DefaultConfig;
import io.stripestack.targetserver.server.StripestackServer;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code stripestack create [--config FILE]}: create the configuration's arrays without serving them. */
@Command(name = "create", mixinStandardHelpOptions = true,
        description = {"Create the arrays of a configuration whose member files do not exist yet (like mdadm --create):",
                "members of create_member_size are written with zeros (sparse with create_sparse: true) and get md",
                "v1.2 superblocks. Existing arrays are left alone; 'serve' assembles them."})
final class CreateCommand implements Callable<Integer> {
    @Option(names = {"-c", "--config"}, paramLabel = "FILE", description = "the configuration file (default: the embedded default)")
    Path config;

    @Override
    public Integer call() throws Exception {
        StripestackConfig c = config != null ? ConfigLoader.load(config) : DefaultConfig.load();
        for (String line : StripestackServer.createArrays(c)) {
            System.out.println(line);
        }
        return 0;
    }
}
