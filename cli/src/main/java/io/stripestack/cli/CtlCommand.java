package io.stripestack.cli;

import io.stripestack.targetserver.control.AdminServer;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code stripestack ctl list|get|set ...}: runtime settings of the running server, like sysfs. */
@Command(name = "ctl", mixinStandardHelpOptions = true,
        description = {"Get and set runtime settings of the running server, like /sys/block/md0/md/*.",
                "  stripestack ctl list [PREFIX]",
                "  stripestack ctl get md0/stripe_cache_size",
                "  stripestack ctl set md0/stripe_cache_size 4096",
                "  stripestack ctl set md0/sync_action check"})
final class CtlCommand implements Callable<Integer> {
    @Mixin
    AdminSocketOption admin;

    @Parameters(index = "0", paramLabel = "list|get|set")
    String verb;

    @Parameters(index = "1..*", paramLabel = "ARGS", arity = "0..2")
    String[] args = new String[0];

    @Override
    public Integer call() throws Exception {
        StringBuilder request = new StringBuilder(verb);
        for (String a : args) {
            request.append(' ').append(a);
        }
        System.out.print(AdminServer.request(admin.resolve(), request.toString()));
        return 0;
    }
}
