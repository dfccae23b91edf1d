package io.stripestack.targetserver.server;

import io.stripestack.initiator.IscsiUrl;
import io.stripestack.targetserver.config.ConfigException;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.ConfigSaver;
import io.stripestack.targetserver.config.RunningState;
import io.stripestack.blockdev.Sizes;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.config.StripestackConfig.RemoteMemberConfig;
import io.stripestack.targetserver.config.StripestackConfig.RemoteMembersConfig;
import io.stripestack.targetserver.config.StripestackConfig.BackingConfig;
import io.stripestack.targetserver.config.StripestackConfig.CryptoConfig;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import io.stripestack.targetserver.config.StripestackConfig.ReadaheadConfig;
import io.stripestack.targetserver.control.ControlRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The administration verbs of the admin socket, as a targetcli or tgtadm user guesses them (docs/operations.md):
 * <pre>
 *   ls
 *   portal create HOST:PORT                  portal delete HOST:PORT
 *   array create NAME MEMBER... [--spare MEMBER]... [--member-size SIZE [--chunk SIZE] [--layout L] [--sparse]]
 *                [--chap-secret-file FILE] [--outside-data-dir]      (a MEMBER is a file or iscsi://HOST:PORT/IQN/LUN)
 *   array delete NAME
 *   target create IQN [--alias ALIAS]        target delete IQN [--force]
 *   lun create IQN LUN (--file PATH [--size SIZE] [--outside-data-dir] | --ram SIZE | --array NAME) [--read-only] [--serial S]
 *              [--key-file FILE [--cipher SPEC] [--key-size BITS] | --luks-key-file FILE | --luks-passphrase-file FILE]
 *   lun delete IQN LUN [--force]             lun set IQN LUN read_only 0|1
 *   acl add IQN INITIATOR                    acl delete IQN INITIATOR
 *   chap set IQN USER SECRET_FILE [--mutual] chap clear IQN [--mutual]
 *   saveconfig [FILE]
 * </pre>
 * Parses the words and hands them to {@link LiveArrays} and {@link LiveTargets}; with {@code server.autosave} every change that
 * succeeded is saved at once. Relative paths resolve under the data directory (the CLI sends absolute ones); a data
 * file outside it, one of the server's own secret or configuration files, or one that is not a regular file or
 * block device is refused ({@link DataFiles}), and every file a verb creates is named in its answer.
 *
 * <p>Concurrency: called on the admin worker thread only, one request at a time; the state is in
 * {@link LiveArrays} and {@link LiveTargets}.
 */
final class AdminVerbs {
    private final LiveArrays arrays;
    private final LiveTargets live;
    private final StripestackConfig config;
    private final LivePortals portals;
    private final DataFiles files;
    /**
     * Where saveconfig and autosave write without a FILE: the configuration file the server runs, or, when it runs
     * the embedded default, the first file saveconfig wrote (null until then).
     */
    private Path saveTarget;

    private AdminVerbs(LiveArrays arrays, LiveTargets live, StripestackConfig config, LivePortals portals,
            DataFiles files) {
        this.arrays = arrays;
        this.live = live;
        this.config = config;
        this.portals = portals;
        this.files = files;
        this.saveTarget = Files.isRegularFile(config.file()) ? config.file() : null;
    }

    static void register(ControlRegistry registry, LiveArrays arrays, LiveTargets live, StripestackConfig config,
            LivePortals portals, DataFiles files) {
        AdminVerbs verbs = new AdminVerbs(arrays, live, config, portals, files);
        arrays.afterMemberAdded(verbs::changed);
        registry.registerCommand("ls", args -> verbs.ls());
        registry.registerCommand("portal", verbs::portal);
        registry.registerCommand("array", verbs::array);
        registry.registerCommand("target", verbs::target);
        registry.registerCommand("lun", verbs::lun);
        registry.registerCommand("acl", verbs::acl);
        registry.registerCommand("chap", verbs::chap);
        registry.registerCommand("saveconfig", verbs::saveconfig);
    }

    private String ls() {
        return AdminTree.render(arrays.arrays(), live.runningTargets(), live.sessions(), portals.bound());
    }

    private String portal(List<String> a) throws IOException {
        Words w = new Words(a, "portal create HOST:PORT | portal delete HOST:PORT");
        String verb = w.next("create|delete");
        String portal = w.next("HOST:PORT");
        w.end();
        return switch (verb) {
            case "create" -> changed(portals.create(portal));
            case "delete" -> changed(portals.delete(portal));
            default -> throw w.usage();
        };
    }

    /**
     * {@code array create NAME MEMBER...}: assembles the array from its existing members, or, with {@code
     * --member-size}, creates it on new ones (mdadm --create's defaults: chunk 512 KiB, left-symmetric, files
     * allocated unless {@code --sparse}). A member or spare is a file under the data directory or a remote LUN,
     * {@code iscsi://[USER@]HOST[:PORT]/IQN/LUN} as in the configuration file ({@code --chap-secret-file FILE} for
     * those that name a CHAP user; the remote options are the defaults).
     */
    private String array(List<String> a) throws IOException {
        Words w = new Words(a, "array create NAME MEMBER... [--spare MEMBER]... [--member-size SIZE [--chunk SIZE]"
                + " [--layout LAYOUT] [--sparse]] [--chap-secret-file FILE] [" + DataFiles.OUTSIDE_FLAG + "]"
                + " (a MEMBER is a file or iscsi://HOST:PORT/IQN/LUN) | array delete NAME");
        switch (w.next("create|delete")) {
            case "create" -> {
                String name = w.next("NAME");
                List<String> memberWords = new ArrayList<>();
                for (String m; (m = w.optionalNext()) != null; ) {
                    memberWords.add(m);
                }
                List<String> spareWords = new ArrayList<>();
                for (String sp; (sp = w.option("--spare")) != null; ) {
                    spareWords.add(sp);
                }
                String memberSize = w.option("--member-size");
                String chunk = w.option("--chunk");
                String layout = w.option("--layout");
                boolean sparse = w.flag("--sparse");
                String secret = w.option("--chap-secret-file");
                boolean outside = w.flag(DataFiles.OUTSIDE_FLAG);
                w.end();
                if (memberSize == null && (chunk != null || layout != null || sparse)) {
                    throw new IllegalArgumentException("--chunk, --layout and --sparse shape a new array and go with"
                            + " --member-size; an existing array's come from its superblocks");
                }
                long chunkBytes = chunk == null ? 512 * 1024 : size(chunk, "--chunk");
                if (chunkBytes < 4096 || chunkBytes > (1L << 30) || Long.bitCount(chunkBytes) != 1) {
                    throw new IllegalArgumentException("--chunk " + chunk + " is not a power of two from 4K to 1G");
                }
                if (layout != null && !ConfigLoader.LAYOUTS.contains(layout)) {
                    throw new IllegalArgumentException("--layout " + layout + " is not one of " + ConfigLoader.LAYOUTS);
                }
                long createSize = memberSize == null ? 0 : size(memberSize, "--member-size");
                if (memberSize != null && createSize < (1L << 20)) {
                    throw new IllegalArgumentException("--member-size " + memberSize + " is below 1M");
                }
                Path secretFile = secret == null ? null : config.dataDir().resolve(secret).toAbsolutePath().normalize();
                if (secretFile != null) {
                    files.refuseAsSecret(secretFile, "be a CHAP secret");
                }
                List<Path> memberFiles = new ArrayList<>();
                List<RemoteMemberConfig> remoteMembers = new ArrayList<>();
                List<Path> spareFiles = new ArrayList<>();
                List<RemoteMemberConfig> remoteSpares = new ArrayList<>();
                boolean[] secretUsed = new boolean[1];
                for (String m : memberWords) {
                    member(m, outside, secretFile, secretUsed, "be a member of " + name, memberFiles, remoteMembers);
                }
                for (String sp : spareWords) {
                    member(sp, outside, secretFile, secretUsed, "be a spare of " + name, spareFiles, remoteSpares);
                }
                if (secretFile != null && !secretUsed[0]) {
                    throw new IllegalArgumentException("--chap-secret-file goes with remote members whose URL names a"
                            + " CHAP user (iscsi://USER@HOST:PORT/IQN/LUN); none does");
                }
                ArrayConfig ac = ArrayConfig.atRunTime(name, memberFiles, spareFiles,
                        RemoteMembersConfig.none().with(remoteMembers, remoteSpares), (int) chunkBytes,
                        layout == null ? "left-symmetric" : layout, createSize, sparse);
                return changed(arrays.create(ac));
            }
            case "delete" -> {
                String name = w.next("NAME");
                w.end();
                return changed(arrays.delete(name));
            }
            default -> throw w.usage();
        }
    }

    /** One member word of {@code array create}: a remote LUN's URL into {@code remotes}, else a data file. */
    private void member(String word, boolean outside, Path secretFile, boolean[] secretUsed, String purpose,
            List<Path> fileList, List<RemoteMemberConfig> remotes) {
        if (!RemoteMemberConfig.looksLikeUrl(word)) {
            fileList.add(files.dataFile(word, outside, purpose));
            return;
        }
        boolean withUser = IscsiUrl.parse(word).chapUser() != null;
        secretUsed[0] |= withUser;
        remotes.add(RemoteMemberConfig.of(word, withUser ? secretFile : null));
    }

    private String target(List<String> a) throws IOException {
        Words w = new Words(a, "target create IQN [--alias ALIAS] | target delete IQN [--force]");
        switch (w.next("create|delete")) {
            case "create" -> {
                String iqn = w.next("IQN");
                String alias = w.option("--alias");
                w.end();
                return changed(live.createTarget(iqn, alias));
            }
            case "delete" -> {
                String iqn = w.next("IQN");
                boolean force = w.flag("--force");
                w.end();
                return changed(live.deleteTarget(iqn, force));
            }
            default -> throw w.usage();
        }
    }

    private String lun(List<String> a) throws IOException {
        Words w = new Words(a, "lun create IQN LUN (--file PATH [--size SIZE] [" + DataFiles.OUTSIDE_FLAG + "] | --ram SIZE"
                + " | --array NAME) [--read-only]"
                + " [--serial S] | lun delete IQN LUN [--force] | lun set IQN LUN read_only 0|1");
        String verb = w.next("create|delete|set");
        String iqn = w.next("IQN");
        int lun = w.number("LUN");
        switch (verb) {
            case "create" -> {
                String file = w.option("--file");
                String size = w.option("--size");
                String ram = w.option("--ram");
                String array = w.option("--array");
                boolean readOnly = w.flag("--read-only");
                String serial = w.option("--serial");
                boolean outside = w.flag(DataFiles.OUTSIDE_FLAG);
                CryptoConfig crypto = crypto(w);
                w.end();
                if (outside && file == null) {
                    throw new IllegalArgumentException(DataFiles.OUTSIDE_FLAG + " goes with --file");
                }
                if ((file == null ? 0 : 1) + (ram == null ? 0 : 1) + (array == null ? 0 : 1) != 1) {
                    throw new IllegalArgumentException("give exactly one of --file PATH, --ram SIZE or --array NAME");
                }
                if (size != null && file == null) {
                    throw new IllegalArgumentException("--size goes with --file (the size of a file to create)");
                }
                BackingConfig backing = file != null
                        ? new BackingConfig(null, files.dataFile(file, outside, "back LUN " + lun + " of " + iqn),
                                size == null ? 0 : size(size, "--size"), false)
                        : ram != null ? new BackingConfig(null, null, ramSize(ram), true)
                        : new BackingConfig(array, null, 0, false);
                return changed(live.createLun(iqn, new LunConfig(lun, backing, crypto, new ReadaheadConfig(-1, false),
                        readOnly, serial)));
            }
            case "delete" -> {
                boolean force = w.flag("--force");
                w.end();
                return changed(live.deleteLun(iqn, lun, force));
            }
            case "set" -> {
                String attribute = w.next("read_only");
                if (!attribute.equals("read_only")) {
                    throw new IllegalArgumentException("a LUN has one attribute to set here, read_only (its"
                            + " read_ahead_kb is 'stripestack ctl set " + iqn + "/lun" + lun + "/read_ahead_kb N')");
                }
                String value = w.next("0|1");
                w.end();
                if (!value.equals("0") && !value.equals("1")) {
                    throw new IllegalArgumentException("read_only takes 0 or 1, not '" + value + "'");
                }
                return changed(live.setReadOnly(iqn, lun, value.equals("1")));
            }
            default -> throw w.usage();
        }
    }

    /**
     * {@code --key-file FILE [--cipher SPEC] [--key-size BITS]}: plain dm-crypt with a raw key; {@code --luks-key-file
     * FILE} or {@code --luks-passphrase-file FILE}: a LUKS volume already formatted on the device below. The files
     * must be readable by their owner only (the crypto layer refuses others, naming the file).
     */
    private CryptoConfig crypto(Words w) {
        String keyFile = w.option("--key-file");
        String cipher = w.option("--cipher");
        String keySize = w.option("--key-size");
        String luksKey = w.option("--luks-key-file");
        String luksPassphrase = w.option("--luks-passphrase-file");
        int given = (keyFile == null ? 0 : 1) + (luksKey == null ? 0 : 1) + (luksPassphrase == null ? 0 : 1);
        if (given > 1) {
            throw new IllegalArgumentException("give one of --key-file, --luks-key-file or --luks-passphrase-file");
        }
        if (given == 0) {
            if (cipher != null || keySize != null) {
                throw new IllegalArgumentException("--cipher and --key-size go with --key-file");
            }
            return null;
        }
        if (keyFile == null) {
            if (cipher != null || keySize != null) {
                throw new IllegalArgumentException("a LUKS volume's cipher and key size come from its header;"
                        + " drop --cipher and --key-size");
            }
            Path file = config.dataDir().resolve(luksKey != null ? luksKey : luksPassphrase);
            return new CryptoConfig(true, null, 0, luksKey != null ? file : null, luksKey != null ? null : file, null,
                    0, 0, 512, false, false, false);
        }
        String spec = cipher == null ? "aes-xts-plain64" : cipher;
        int bits = keySize == null ? (spec.contains("-xts-") ? 512 : 256) : w.parseNumber(keySize, "--key-size");
        if (bits < 128 || bits > 512 || bits % 64 != 0) {
            throw new IllegalArgumentException("--key-size " + bits + " is not a key size (128, 256 or, for XTS, 256 and 512)");
        }
        return new CryptoConfig(false, spec, bits, config.dataDir().resolve(keyFile), null, "ripemd160", 0, 0, 512,
                false, false, false);
    }

    private String acl(List<String> a) throws IOException {
        Words w = new Words(a, "acl add IQN INITIATOR | acl delete IQN INITIATOR");
        String verb = w.next("add|delete");
        String iqn = w.next("IQN");
        String initiator = w.next("INITIATOR");
        w.end();
        return switch (verb) {
            case "add" -> changed(live.addAcl(iqn, initiator));
            case "delete" -> changed(live.removeAcl(iqn, initiator));
            default -> throw w.usage();
        };
    }

    private String chap(List<String> a) throws IOException {
        Words w = new Words(a, "chap set IQN USER SECRET_FILE [--mutual] | chap clear IQN [--mutual]");
        String verb = w.next("set|clear");
        String iqn = w.next("IQN");
        switch (verb) {
            case "set" -> {
                String user = w.next("USER");
                Path file = Path.of(w.next("SECRET_FILE"));
                boolean mutual = w.flag("--mutual");
                w.end();
                return changed(live.setChap(iqn, user, file, mutual));
            }
            case "clear" -> {
                boolean mutual = w.flag("--mutual");
                w.end();
                return changed(live.clearChap(iqn, mutual));
            }
            default -> throw w.usage();
        }
    }

    private String saveconfig(List<String> a) throws IOException {
        Words w = new Words(a, "saveconfig [FILE]");
        String file = w.optionalNext();
        w.end();
        return save(file == null ? null : Path.of(file));
    }

    /** A change's answer, followed by the save's when autosave is on. */
    private String changed(String answer) throws IOException {
        if (!config.server().autosave()) {
            return answer;
        }
        try {
            return answer + "\n" + save(null);
        } catch (IOException | RuntimeException e) {
            throw new IOException(answer + "; but autosave failed: " + e.getMessage(), e);
        }
    }

    /**
     * Writes the running state to {@code requested}, or without it to the save target: the server's own file, or,
     * for a server that runs the embedded default, the first file saveconfig wrote ({@code FILE}, else {@value
     * #DEFAULT_SAVE_NAME} in the data directory), which later saves and autosave then use. Says where it went.
     */
    private String save(Path requested) throws IOException {
        Path own = config.file();
        boolean ownExists = Files.isRegularFile(own);
        Path file = (requested != null ? requested : saveTarget != null ? saveTarget
                : config.dataDir().resolve(DEFAULT_SAVE_NAME)).toAbsolutePath().normalize();
        RunningState state = new RunningState(portals.running(), arrays.running(), live.runningTargets());
        synchronized (ConfigSaver.FILE_LOCK) {   // a finished reshape may rewrite its array's entry meanwhile
            String base;
            try {
                base = ownExists ? Files.readString(own, StandardCharsets.UTF_8)
                        : saveTarget != null && Files.isRegularFile(saveTarget)
                        ? Files.readString(saveTarget, StandardCharsets.UTF_8) : DefaultConfig.text();
            } catch (ConfigException e) {
                throw new IOException(e.getMessage(), e);
            }
            if (requested == null && saveTarget == null) {
                Files.createDirectories(file.getParent());   // the data directory's file, for the embedded default
            }
            ConfigSaver.save(file, base, state, config.dataDir(), Path.of(""));
        }
        String note = "";
        if (saveTarget == null) {
            saveTarget = file;
            note = "; the server runs the embedded default, so saveconfig without a FILE and autosave write " + file
                    + " from now on: start the server with --config " + file + " to run it";
        }
        return "saved " + state.portals().size() + " portals, " + state.arrays().size() + " arrays and "
                + state.targets().size() + " targets to " + file
                + " atomically (" + ConfigSaver.COMMENTS_NOTE + ")" + note;
    }

    /** The file in the data directory that saveconfig writes for a server that runs the embedded default. */
    static final String DEFAULT_SAVE_NAME = "stripestack.yaml";

    private static long size(String text, String what) {
        try {
            return Sizes.parse(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(what + " " + text + ": " + e.getMessage(), e);
        }
    }

    private static long ramSize(String text) {
        long bytes = size(text, "--ram");
        if (bytes < (1L << 20) || bytes > (1L << 31) - 4096) {
            throw new IllegalArgumentException("--ram " + text + " is outside 1M..2047M (a RAM LUN lives in the heap)");
        }
        return bytes;
    }

    /** The words of one request: positional words in order, then options anywhere after them. */
    private static final class Words {
        private final List<String> words;
        private final String usage;
        private int next;

        Words(List<String> words, String usage) {
            this.words = new ArrayList<>(words);
            this.usage = usage;
        }

        String next(String what) {
            if (next >= words.size() || words.get(next).startsWith("--")) {
                throw new IllegalArgumentException("missing " + what + "; usage: " + usage);
            }
            return words.get(next++);
        }

        String optionalNext() {
            return next < words.size() && !words.get(next).startsWith("--") ? words.get(next++) : null;
        }

        int number(String what) {
            return parseNumber(next(what), what);
        }

        int parseNumber(String word, String what) {
            try {
                return Integer.parseInt(word);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(what + " '" + word + "' is not a number; usage: " + usage);
            }
        }

        boolean flag(String name) {
            return words.subList(next, words.size()).remove(name);
        }

        String option(String name) {
            List<String> rest = words.subList(next, words.size());
            int i = rest.indexOf(name);
            if (i < 0) {
                return null;
            }
            if (i + 1 >= rest.size() || rest.get(i + 1).startsWith("--")) {
                throw new IllegalArgumentException(name + " needs a value; usage: " + usage);
            }
            String value = rest.get(i + 1);
            rest.subList(i, i + 2).clear();
            return value;
        }

        void end() {
            if (next < words.size()) {
                throw new IllegalArgumentException("unexpected '" + String.join(" ", words.subList(next, words.size()))
                        + "'; usage: " + usage);
            }
        }

        IllegalArgumentException usage() {
            return new IllegalArgumentException("usage: " + usage);
        }
    }
}
