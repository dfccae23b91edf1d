package io.stripestack.cli;

import io.stripestack.targetserver.control.AdminServer;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code stripestack status [--watch]}: arrays like /proc/mdstat, layers like iostat. */
@Command(name = "status", mixinStandardHelpOptions = true,
        description = "Print the arrays like /proc/mdstat and per-layer statistics like iostat.")
final class StatusCommand implements Callable<Integer> {
    @Mixin
    AdminSocketOption admin;

    @Option(names = {"-w", "--watch"}, paramLabel = "SECONDS", arity = "0..1", fallbackValue = "2",
            description = "repeat every SECONDS (default 2) until interrupted; rates are per interval")
    Integer watchSeconds;

    @Override
    public Integer call() throws Exception {
        var socket = admin.resolve();
        if (watchSeconds == null) {
            System.out.print(AdminServer.request(socket, "status"));
            return 0;
        }
        while (true) {
            String report = AdminServer.request(socket, "status " + watchSeconds);
            System.out.print("\033[H\033[2J" + report);
            System.out.flush();
            Thread.sleep(watchSeconds * 1000L);
        }
    }
}
