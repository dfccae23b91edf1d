package io.stripestack.cli;

import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.server.DefaultConfig;
import io.stripestack.targetserver.server.StripestackServer;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code stripestack serve [--config FILE]}: runs the target until SIGTERM/SIGINT. */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = {"Run the iSCSI target. Without --config it runs the embedded default (conf/default.yaml):",
                "a RAID-5 array of 4 member files under ./data/md0, exported as LUN 0 on 127.0.0.1:3260.",
                "SIGTERM or Ctrl-C drains in-flight commands, flushes every member and marks the arrays clean."})
final class ServeCommand implements Callable<Integer> {
    @Option(names = {"-c", "--config"}, paramLabel = "FILE", description = "the configuration file")
    Path config;

    @Option(names = "--force", description = {"Start an array that lost more than one member as mdadm --assemble "
            + "--force does: the members that left only as it failed (a full file system, targets that died at once)",
            "are taken back in sync and named in the log, the others rebuilt; a member the array wrote without is "
            + "refused by name (docs/operations.md)."})
    boolean force;

    @Override
    public Integer call() throws Exception {
        StripestackConfig c = config != null ? ConfigLoader.load(config) : DefaultConfig.load();
        StripestackServer server = StripestackServer.start(c, force);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close();
            stopped.countDown();
        }, "shutdown"));
        stopped.await();
        return 0;
    }
}
