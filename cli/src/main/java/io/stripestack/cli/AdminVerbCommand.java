package io.stripestack.cli;

import io.stripestack.targetserver.control.AdminServer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Unmatched;

/**
 * The administration verbs ({@code ls}, {@code portal}, {@code array}, {@code target}, {@code lun}, {@code acl},
 * {@code chap}, {@code saveconfig}):
 * each sends its words to the running server's admin socket, which checks them (docs/operations.md), and prints
 * the answer. Paths are sent absolute, since the server may run in another directory; a word with white space
 * cannot be sent (the request is one line of words). Secrets never pass here: CHAP takes a secret file.
 */
abstract class AdminVerbCommand implements Callable<Integer> {
    @Mixin
    AdminSocketOption admin;

    @Unmatched
    List<String> words = new ArrayList<>();

    /** The verb on the admin socket. */
    abstract String verb();

    /** Whether {@code words[i]} is a path, given the words before it. */
    boolean isPath(List<String> words, int i) {
        return false;
    }

    @Override
    public Integer call() throws Exception {
        StringBuilder request = new StringBuilder(verb());
        for (int i = 0; i < words.size(); i++) {
            String word = words.get(i);
            if (word.isEmpty() || word.chars().anyMatch(Character::isWhitespace)) {
                throw new IllegalArgumentException("'" + word + "': words with white space cannot be sent to the server;"
                        + " rename the file or use a link without spaces");
            }
            request.append(' ').append(isPath(words, i) ? Path.of(word).toAbsolutePath().normalize() : word);
        }
        System.out.print(AdminServer.request(admin.resolve(), request.toString()));
        return 0;
    }

    @Command(name = "ls", mixinStandardHelpOptions = true,
            description = "List the running server as a tree: arrays, targets with LUNs, ACLs, CHAP and sessions, portals.")
    static final class Ls extends AdminVerbCommand {
        @Override
        String verb() {
            return "ls";
        }
    }

    @Command(name = "portal", mixinStandardHelpOptions = true,
            description = {"Listen on another address, or stop listening on one, on the running server.",
                    "  stripestack portal create HOST:PORT   (port 0 picks a free one; [::1]:3260 for IPv6)",
                    "  stripestack portal delete HOST:PORT   (sessions logged in through it stay; the last one stays)"})
    static final class PortalVerb extends AdminVerbCommand {
        @Override
        String verb() {
            return "portal";
        }
    }

    @Command(name = "array", mixinStandardHelpOptions = true,
            description = {"Start or stop a RAID-5 array on the running server (member files only; remote members are"
                    + " configured in the file).",
                    "  stripestack array create NAME MEMBER_FILE... [--spare FILE]...   (assembles existing members)",
                    "  stripestack array create NAME MEMBER_FILE... --member-size SIZE [--chunk SIZE] [--layout L] [--sparse]",
                    "      (creates the members, like mdadm --create; none of them may exist)",
                    "  stripestack array delete NAME   (refused while a LUN exports it; the member files stay)"})
    static final class Array extends AdminVerbCommand {
        private static final List<String> VALUE_OPTIONS = List.of("--member-size", "--chunk", "--layout");

        @Override
        String verb() {
            return "array";
        }

        @Override
        boolean isPath(List<String> words, int i) {
            if (words.isEmpty() || !words.get(0).equals("create") || i < 2) {
                return false;
            }
            String previous = words.get(i - 1);
            return previous.equals("--spare") || !words.get(i).startsWith("--") && !VALUE_OPTIONS.contains(previous);
        }
    }

    @Command(name = "target", mixinStandardHelpOptions = true,
            description = {"Create or delete a target on the running server.",
                    "  stripestack target create IQN [--alias ALIAS]",
                    "  stripestack target delete IQN [--force]   (--force logs its sessions out)"})
    static final class Target extends AdminVerbCommand {
        @Override
        String verb() {
            return "target";
        }
    }

    @Command(name = "lun", mixinStandardHelpOptions = true,
            description = {"Create, delete or change a LUN of a target on the running server.",
                    "  stripestack lun create IQN LUN --file PATH [--size SIZE] [--read-only] [--serial S]",
                    "  stripestack lun create IQN LUN --ram SIZE",
                    "  stripestack lun create IQN LUN --array NAME",
                    "    plus, for dm-crypt: --key-file FILE [--cipher SPEC] [--key-size BITS]",
                    "    or, for a LUKS volume on it: --luks-key-file FILE | --luks-passphrase-file FILE",
                    "  stripestack lun delete IQN LUN [--force]   (refused while sessions are logged in, unless --force)",
                    "  stripestack lun set IQN LUN read_only 0|1"})
    static final class Lun extends AdminVerbCommand {
        private static final List<String> PATH_OPTIONS = List.of("--file", "--key-file", "--luks-key-file",
                "--luks-passphrase-file");

        @Override
        String verb() {
            return "lun";
        }

        @Override
        boolean isPath(List<String> words, int i) {
            return i > 0 && PATH_OPTIONS.contains(words.get(i - 1));
        }
    }

    @Command(name = "acl", mixinStandardHelpOptions = true,
            description = {"Allow or forbid an initiator on a target of the running server.",
                    "  stripestack acl add IQN INITIATOR_IQN",
                    "  stripestack acl delete IQN INITIATOR_IQN   (that initiator's sessions are logged out)"})
    static final class Acl extends AdminVerbCommand {
        @Override
        String verb() {
            return "acl";
        }
    }

    @Command(name = "chap", mixinStandardHelpOptions = true,
            description = {"Set or clear a target's CHAP credentials; the secret comes from a file only its owner reads.",
                    "  stripestack chap set IQN USER SECRET_FILE [--mutual]",
                    "  stripestack chap clear IQN [--mutual]"})
    static final class Chap extends AdminVerbCommand {
        @Override
        String verb() {
            return "chap";
        }

        @Override
        boolean isPath(List<String> words, int i) {
            return i == 3 && words.get(0).equals("set");
        }
    }

    @Command(name = "saveconfig", mixinStandardHelpOptions = true,
            description = {"Write the running portals, arrays and targets to the configuration file (or FILE) atomically.",
                    "  stripestack saveconfig [FILE]",
                    "Comments outside the targets: section are kept; the targets: section is written anew, and an"
                            + " arrays: entry is added or dropped whole."})
    static final class SaveConfig extends AdminVerbCommand {
        @Override
        String verb() {
            return "saveconfig";
        }

        @Override
        boolean isPath(List<String> words, int i) {
            return i == 0;
        }
    }
}
