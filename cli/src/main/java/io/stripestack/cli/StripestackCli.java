package io.stripestack.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code stripestack} command: {@code bin/stripestack COMMAND ...}; {@code --help} on each. */
@Command(name = "stripestack", mixinStandardHelpOptions = true, version = "stripestack 0.1.0",
        description = "User-space iSCSI target exporting dm-crypt-on-md-RAID-5 compatible stacks.",
        subcommands = {ServeCommand.class, CreateCommand.class, LuksCommand.class, CtlCommand.class, StatusCommand.class,
                AdminVerbCommand.Ls.class, AdminVerbCommand.PortalVerb.class, AdminVerbCommand.Array.class, AdminVerbCommand.Target.class, AdminVerbCommand.Lun.class, AdminVerbCommand.Acl.class,
                AdminVerbCommand.Chap.class, AdminVerbCommand.SaveConfig.class, io.stripestack.bench.BenchCommand.class, io.stripestack.bench.soak.SoakCommand.class, CommandLine.HelpCommand.class})
public final class StripestackCli {

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs one command line and returns its exit code (tests call this). */
    public static int run(String... args) {
        CommandLine cli = new CommandLine(new StripestackCli());
        cli.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            commandLine.getErr().println("stripestack: " + (ex.getMessage() == null ? ex.toString() : ex.getMessage()));
            return 1;
        });
        return cli.execute(args);
    }
}
