package io.stripestack.cli;

import io.stripestack.targetserver.control.AdminServer;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/**
 * {@code stripestack ctl list|get|set|wait ...}: runtime settings of the running server, like sysfs; {@code wait}
 * polls an array's sync_action until nothing runs, like {@code mdadm --wait}.
 */
@Command(name = "ctl", mixinStandardHelpOptions = true,
        description = {"Get and set runtime settings of the running server, like /sys/block/md0/md/*, and wait for an"
                + " array's resync, rebuild, check or reshape to end (like mdadm --wait).",
                "  stripestack ctl list [PREFIX]",
                "  stripestack ctl get md0/stripe_cache_size",
                "  stripestack ctl set md0/stripe_cache_size 4096",
                "  stripestack ctl set md0/sync_action check",
                "  stripestack ctl wait md0"})
final class CtlCommand implements Callable<Integer> {
    /** How often {@code wait} asks; a sync action's end needs no finer resolution than a person does. */
    private static final long POLL_MILLIS = 250;

    @Mixin
    AdminSocketOption admin;

    @Parameters(index = "0", paramLabel = "list|get|set|wait")
    String verb;

    @Parameters(index = "1..*", paramLabel = "ARGS", arity = "0..2")
    String[] args = new String[0];

    @Override
    public Integer call() throws Exception {
        if (verb.equals("wait")) {
            return await();
        }
        StringBuilder request = new StringBuilder(verb);
        for (String a : args) {
            request.append(' ').append(a);
        }
        System.out.print(AdminServer.request(admin.resolve(), request.toString()));
        return 0;
    }

    /** {@code wait ARRAY}: returns once the array's sync_action is idle or frozen (nothing runs). */
    private int await() throws Exception {
        if (args.length != 1) {
            throw new IllegalArgumentException("ctl wait takes one array name, e.g. 'ctl wait md0'");
        }
        var socket = admin.resolve();
        String request = "get " + args[0] + "/sync_action";
        while (true) {
            String action = AdminServer.request(socket, request).strip();
            if (action.equals("idle") || action.equals("frozen")) {
                return 0;
            }
            Thread.sleep(POLL_MILLIS);
        }
    }
}
