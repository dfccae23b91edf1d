package io.stripestack.cli;

import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Help;
import picocli.CommandLine.Help.Column;
import picocli.CommandLine.Model.UsageMessageSpec;

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
        wholeDescriptions(cli);
        cli.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            commandLine.getErr().println("stripestack: " + (ex.getMessage() == null ? ex.toString() : ex.getMessage()));
            return 1;
        });
        return cli.execute(args);
    }

    private static void wholeDescriptions(CommandLine command) {
        command.getHelpSectionMap().put(UsageMessageSpec.SECTION_KEY_COMMAND_LIST, StripestackCli::commandList);
        for (CommandLine sub : command.getSubcommands().values()) {
            wholeDescriptions(sub);
        }
    }

    /**
     * The list of commands with each one's whole description, wrapped to the help width (picocli's own list shows
     * the first line of a description only, which cuts most of them mid-sentence). Lines of a description that
     * start with a space are examples, left for the command's own --help.
     */
    private static String commandList(Help help) {
        Map<String, Help> commands = help.subcommands();
        if (commands.isEmpty()) {
            return "";
        }
        int nameWidth = 2;
        for (String name : commands.keySet()) {
            nameWidth = Math.max(nameWidth, name.length() + 4);
        }
        int width = help.commandSpec().usageMessage().width();
        Help.TextTable table = Help.TextTable.forColumns(help.colorScheme(),
                new Column(nameWidth, 2, Column.Overflow.SPAN), new Column(width - nameWidth, 0, Column.Overflow.WRAP));
        for (Map.Entry<String, Help> command : commands.entrySet()) {
            StringBuilder text = new StringBuilder();
            for (String line : command.getValue().commandSpec().usageMessage().description()) {
                if (line.startsWith(" ")) {
                    break;
                }
                // picocli formats description lines (%n is a line break); here they run on as one paragraph
                String formatted = String.format(line).replace(System.lineSeparator(), " ").strip();
                text.append(text.length() == 0 || formatted.isEmpty() ? "" : " ").append(formatted);
            }
            table.addRowValues(command.getKey(), text.toString());
        }
        return table.toString();
    }
}
