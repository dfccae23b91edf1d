package io.stripestack.targetserver.server;

import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.raid5.ConsistencyPolicy;
import io.stripestack.raid5.Md1Superblock;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Files;
import io.stripestack.raid5.Raid5Options;
import io.stripestack.raid5.Raid5Status;
import io.stripestack.remote.RemoteBlockDevice;
import io.stripestack.remote.RemoteEndpoint;
import io.stripestack.remote.RemoteMemberOptions;
import io.stripestack.blockdev.Sizes;
import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.config.StripestackConfig.RemoteMemberConfig;
import io.stripestack.targetserver.control.ControlRegistry;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running server's RAID-5 arrays: assembled or created at start-up from the configuration, and created
 * (from new member files or remote LUNs, like {@code mdadm --create}, or assembled from existing ones) or stopped
 * at run time by the administration; members added ({@code NAME/add}: a file, a remote LUN's URL, or a removed
 * member given back, which is re-added). Stopping an array closes it clean and leaves its member files and
 * remote LUNs as they are. Every refusal is an {@link IllegalArgumentException} or {@link IOException} naming
 * what and why, thrown before anything changed.
 *
 * <p>The description of an array ({@link #running}) is its configuration with the members, spares and chunk it
 * has now (read from the array, so a member failed, removed, replaced or grown onto is listed as it is) and the
 * settings an operator changed at run time; saveconfig, the reshape's rewrite of the file and the refusal of a
 * file in use all read that one description.
 *
 * <p>Concurrency: changes are synchronized on this object and come from the starting thread, then from the admin
 * worker (array and member changes) and admin connections (settings); a finished reshape's update comes from its
 * reshape thread. The array map and the remote member map handed out are concurrent maps (listed by name) that the
 * status report, the metrics endpoint, the remote member watcher and the LUN factory read at any time; an array is
 * put in them once open and taken out before it is closed. The LUN stacks are {@link LiveTargets}'; this object
 * only reads them. Lock order: LiveTargets' monitor, then this one's (a LUN's file refused as in use); this object
 * never waits for LiveTargets' monitor while it holds its own.
 */
final class LiveArrays implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LiveArrays.class);
    /** Names usable as a control path's first part and as a YAML key without quoting surprises. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,63}");

    private final Map<String, Raid5Array> arrays = new ConcurrentSkipListMap<>();
    /** Each array as configured or given, with the files, remote LUNs and settings added since. */
    private final Map<String, ArrayConfig> configs = new ConcurrentSkipListMap<>();
    /** Each array's members and spares on remote targets (copy-on-write lists), for status, metrics and returns. */
    private final Map<String, List<RemoteBlockDevice>> remoteDevices = new ConcurrentSkipListMap<>();
    /** Per array, every member and spare device name it has held since it was opened; guarded by this object. */
    private final Map<String, Set<String>> held = new HashMap<>();
    /** Per array, the sync speeds (min, max KiB/s) an operator set, applied again after a reshape; guarded by this. */
    private final Map<String, int[]> syncSpeeds = new HashMap<>();
    /** Arrays created (not assembled) at start-up: their contents are all zeros. */
    private final Set<String> createdAtStart = new HashSet<>();
    private final Supplier<List<LunStack>> luns;
    private final ControlRegistry registry;
    private final DataFiles files;
    private final Reshaped reshaped;
    /** What follows a member added ({@code NAME/add}): autosave, when it is on; set once the verbs exist. */
    private volatile Autosave autosave = answer -> answer;

    /** Saves the configuration after a change when {@code server.autosave} is on; returns the answer with the save's. */
    interface Autosave {
        String changed(String answer) throws IOException;
    }

    /** What the server does when a reshape of an array has finished: its LUNs and its configuration entry follow. */
    interface Reshaped {
        /** Called on the array's reshape thread, without this object's monitor. */
        void reshaped(Raid5Array array, ArrayConfig now);
    }

    /**
     * @param luns     the server's LUN stacks ({@link LiveTargets#stacks}), read to find the LUN that exports an
     *                 array and the files LUNs stand on
     * @param reshaped told when a reshape of a running array has finished, with the array's members and spares by
     *                 then (the spares it grew onto are members)
     */
    LiveArrays(Supplier<List<LunStack>> luns, ControlRegistry registry, DataFiles files, Reshaped reshaped) {
        this.luns = luns;
        this.registry = registry;
        this.files = files;
        this.reshaped = reshaped;
    }

    /**
     * Opens a configured array at start-up (created when none of its members exists and it says how); a member or
     * spare file of an array opened before is refused as at run time.
     */
    synchronized StackBuilder.OpenedArray openAtStart(ArrayConfig ac, boolean force) throws IOException {
        for (Path f : ac.members()) {
            refuseFileInUse(f, "be a member of " + ac.name());
        }
        for (Path f : ac.spares()) {
            refuseFileInUse(f, "be a spare of " + ac.name());
        }
        StackBuilder.OpenedArray opened = StackBuilder.openArray(ac, options(ac).withForce(force));
        if (opened.created()) {
            createdAtStart.add(ac.name());
        }
        publish(ac, opened);
        return opened;
    }

    /**
     * {@code array create}: all member files exist (or remote members carry superblocks), the array is assembled
     * from them (a spare that does not exist is created and added); none exists, it is created with members of
     * {@code ac.createMemberSize()} bytes. Refused: a name taken or not usable, a member given twice, a member
     * file that is a member or spare of another array or backs a LUN, a remote LUN another array has, some member
     * files existing and others not, a new array without a member size.
     */
    synchronized String create(ArrayConfig ac) throws IOException {
        if (!NAME.matcher(ac.name()).matches()) {
            throw new IllegalArgumentException("'" + ac.name() + "' is not an array name (letters, digits, '_', '.', '-';"
                    + " up to 64, e.g. md1); nothing changed");
        }
        if (arrays.containsKey(ac.name())) {
            throw new IllegalArgumentException("array " + ac.name() + " exists already; nothing changed");
        }
        int count = ac.members().size() + ac.remote().members().size();
        if (count < 3) {
            throw new IllegalArgumentException("RAID-5 needs at least 3 members, " + count + " given; nothing changed");
        }
        Set<Path> seen = new HashSet<>();
        for (Path f : ac.files()) {
            if (!seen.add(f.toAbsolutePath().normalize())) {
                throw new IllegalArgumentException("file " + f + " is given twice; nothing changed");
            }
            refuseFileInUse(f, "be a member of " + ac.name());
        }
        Set<String> urls = new HashSet<>();
        for (List<RemoteMemberConfig> list : List.of(ac.remote().members(), ac.remote().spares())) {
            for (RemoteMemberConfig r : list) {
                if (!urls.add(r.url().toString())) {
                    throw new IllegalArgumentException("the remote LUN " + r.url() + " is given twice; nothing changed");
                }
                refuseRemoteInUse(r, ac.name());
            }
        }
        long existing = ac.members().stream().filter(Files::exists).count();
        if (existing > 0 && existing < ac.members().size()) {
            throw new IllegalArgumentException("array " + ac.name() + ": " + existing + " of " + ac.members().size()
                    + " member files exist; give all existing members to assemble an array, or only new files to"
                    + " create one; nothing changed");
        }
        if (existing == 0 && ac.createMemberSize() <= 0 && ac.remote().members().isEmpty()) {
            throw new IllegalArgumentException("array " + ac.name() + ": none of its member files exists; give"
                    + " --member-size SIZE to create a new array on them; nothing changed");
        }
        if (existing > 0 && ac.createMemberSize() > 0) {
            throw new IllegalArgumentException("array " + ac.name() + ": its member files exist, and --member-size"
                    + " creates new ones; drop --member-size to assemble them; nothing changed");
        }
        List<Path> absent = ac.files().stream().filter(f -> !Files.exists(f)).toList();
        StackBuilder.OpenedArray opened;
        try {
            opened = StackBuilder.openArray(ac, options(ac));
        } catch (IOException | RuntimeException e) {
            // a creation that failed part way leaves no member file behind: the refusal changes nothing
            for (Path f : absent) {
                try {
                    Files.deleteIfExists(f);
                } catch (IOException ignored) {
                    e.addSuppressed(ignored);
                }
            }
            throw new IOException("array " + ac.name() + " not " + (existing == 0 ? "created" : "assembled") + ": "
                    + e.getMessage() + "; nothing changed", e);
        }
        Raid5Array array = opened.array();
        publish(ac, opened);
        log.info("array {} {} at run time: {}", ac.name(), opened.created() ? "created" : "assembled",
                array.status().mdstat().replace("\n", " "));
        StringBuilder answer = new StringBuilder();
        for (Path f : absent) {
            answer.append("created ").append(f).append(" (").append(Sizes.format(Files.size(f))).append(", ")
                    .append(ac.createSparse() ? "sparse" : "allocated").append(")\n");
        }
        for (String problem : array.assemblyProblems()) {
            answer.append("warning: ").append(problem).append('\n');
        }
        return answer + (opened.created() ? "created" : "assembled") + " array " + ac.name() + ": "
                + array.status().mdstat().replace("\n", "\n  ");
    }

    /**
     * {@code array delete}: refused while a LUN exports the array. Otherwise its attributes go, then it is closed
     * clean (its remote members logged out); its member files and remote LUNs stay as they are.
     */
    synchronized String delete(String name) {
        Raid5Array array = require(name);
        for (LunStack s : luns.get()) {
            if (name.equals(s.config().backing().array())) {
                throw new IllegalArgumentException("array " + name + " is exported by " + s.controlPath()
                        + "; delete that LUN first; nothing changed");
            }
        }
        arrays.remove(name);
        configs.remove(name);
        held.remove(name);
        syncSpeeds.remove(name);
        List<RemoteBlockDevice> remote = remoteDevices.remove(name);
        registry.unregisterAll(name + "/");
        try {
            array.close();
        } catch (IOException | RuntimeException e) {
            log.error("closing array {} failed: {}", name, e.getMessage());
            return "stopped array " + name + ", but closing it failed: " + e.getMessage();
        }
        log.info("array {} stopped at run time", name);
        return "stopped array " + name + " (closed clean; its member files are left as they are"
                + (remote == null ? "" : ", its " + remote.size() + " remote members logged out") + ")";
    }

    /**
     * {@code ctl set NAME/add WHAT}: {@code WHAT} is a remote LUN's URL (as in the configuration file; {@code
     * --chap-secret-file FILE} with a CHAP user), or a file under the data directory ({@value DataFiles#OUTSIDE_FLAG}
     * for one outside it). A file that carries the superblock of a member of this array that failed and was removed
     * is re-added into its role (through the write-intent bitmap when the array has one); any other is added as a
     * hot spare (created when missing). A file or remote LUN in use (another array's, a LUN's, or this array's
     * already) is refused by name.
     *
     * <p>The paths are checked ({@link DataFiles}, which asks {@link LiveTargets} for its key files) and a remote
     * LUN is logged in to before this object's monitor is taken, so that it never waits for LiveTargets' (which
     * waits for this one's to refuse a file in use) nor holds it during a login.
     *
     * @return what happened, for the operator: the file created, the member re-added, the rebuild started
     */
    String add(String name, String request) throws IOException {
        require(name);
        List<String> words = new ArrayList<>(List.of(request.trim().split("\\s+")));
        boolean outside = words.remove(DataFiles.OUTSIDE_FLAG);
        String secret = null;
        int at = words.indexOf("--chap-secret-file");
        if (at >= 0) {
            if (at + 1 >= words.size()) {
                throw new IllegalArgumentException("--chap-secret-file needs a FILE");
            }
            secret = words.remove(at + 1);
            words.remove(at);
        }
        if (words.size() != 1 || words.get(0).isEmpty()) {
            throw new IllegalArgumentException("give one file or remote LUN to add: FILE [" + DataFiles.OUTSIDE_FLAG
                    + "] or iscsi://[USER@]HOST[:PORT]/IQN/LUN [--chap-secret-file FILE]; nothing changed");
        }
        String what = words.get(0);
        if (RemoteMemberConfig.looksLikeUrl(what)) {
            if (outside) {
                throw new IllegalArgumentException(DataFiles.OUTSIDE_FLAG + " goes with a file; nothing changed");
            }
            Path secretFile = secret == null ? null : files.dataDir().resolve(secret).toAbsolutePath().normalize();
            if (secretFile != null) {
                files.refuseAsSecret(secretFile, "be a CHAP secret");
            }
            return addRemote(name, RemoteMemberConfig.of(what, secretFile));
        }
        if (secret != null) {
            throw new IllegalArgumentException("--chap-secret-file goes with a remote LUN's URL; nothing changed");
        }
        return addFile(name, files.dataFile(what, outside, "be added to " + name));
    }

    private synchronized String addFile(String name, Path file) throws IOException {
        ArrayConfig ac = configs.get(name);
        Raid5Array array = require(name);
        ArrayConfig now = current(name);
        for (Path f : now.files()) {
            if (DataFiles.sameFile(f, file)) {
                throw new IllegalArgumentException("file " + file + " is " + (now.members().contains(f) ? "a member"
                        : "a spare") + " of array " + name + " already; nothing changed");
            }
        }
        refuseFileInUse(file, "be added to " + name);
        if (Files.exists(file) && array.uuid().equals(setUuid(file))) {
            FileBlockDevice device = FileBlockDevice.open(file, 512, false, false);
            try {
                int role = array.reAddMember(device);
                remember(name, file);
                log.info("array {}: {} re-added as member {} at run time", name, file, role);
                return "re-added " + file + " to " + name + " as member " + role + " (it was failed and removed); "
                        + (array.status().health() == Raid5Status.Health.CLEAN ? "in sync"
                        : "rebuilding " + (hasBitmap(array) ? "the regions written while it was away (write-intent bitmap)"
                        : "it whole (no write-intent bitmap)"));
            } catch (IllegalArgumentException notThatMember) {
                device.close();
                log.info("array {}: {} carries its superblock but cannot be re-added ({}); adding it as a spare", name,
                        file, notThatMember.getMessage());
            } catch (IOException | RuntimeException e) {
                device.close();
                throw e;
            }
        }
        boolean created = !Files.exists(file);
        Raid5Files.addSpare(array, file, 0, !ac.createSparse());
        remember(name, file);
        log.info("array {}: {} added as a spare at run time{}", name, file, created ? " (created)" : "");
        return (created ? "created " + file + " (" + Sizes.format(Files.size(file)) + ", "
                + (ac.createSparse() ? "sparse" : "allocated") + ") and added it" : "added " + file + " (its contents"
                + " are overwritten)") + " to " + name + " as a spare" + rebuildNote(array);
    }

    private String addRemote(String name, RemoteMemberConfig remote) throws IOException {
        RemoteMemberOptions options;
        synchronized (this) {
            require(name);
            refuseRemoteInUse(remote, name);
            options = configs.get(name).remote().options();
        }
        RemoteEndpoint endpoint = new RemoteEndpoint(remote.url(), remote.chapSecretFile());
        RemoteBlockDevice device;
        try {
            device = RemoteBlockDevice.open(endpoint, options);
        } catch (IOException e) {
            throw new IOException("cannot reach the remote LUN " + remote.url() + ": " + e.getMessage()
                    + "; nothing changed", e);
        }
        try {
            return addRemote(name, remote, device);
        } catch (IOException | RuntimeException e) {
            device.close();
            throw e;
        }
    }

    /** Adds the logged-in {@code device} as a spare of {@code name} (refused as in use if taken meanwhile). */
    private synchronized String addRemote(String name, RemoteMemberConfig remote, RemoteBlockDevice device)
            throws IOException {
        Raid5Array array = require(name);
        refuseRemoteInUse(remote, name);
        array.addSpare(device);
        ArrayConfig latest = configs.get(name);
        List<RemoteMemberConfig> spares = new ArrayList<>(latest.remote().spares());
        spares.add(remote);
        configs.put(name, latest.withMembers(latest.members(), latest.spares(),
                latest.remote().with(latest.remote().members(), spares)));
        List<RemoteBlockDevice> devices = remoteDevices.computeIfAbsent(name, n -> new CopyOnWriteArrayList<>());
        devices.add(device);
        RemoteMemberReport.registerControl(registry, name, devices.size() - 1, device);
        log.info("array {}: remote LUN {} added as a spare at run time", name, remote.url());
        return "added the remote LUN " + remote.url() + " to " + name + " as a spare (its contents are overwritten;"
                + " ctl get " + name + "/remote/" + (devices.size() - 1) + " shows its connection)" + rebuildNote(array);
    }

    void afterMemberAdded(Autosave then) {
        this.autosave = then;
    }

    /** Records a file added to {@code name} (a re-added member the configuration may not name). */
    private void remember(String name, Path file) {
        ArrayConfig latest = configs.get(name);
        for (Path known : latest.files()) {
            if (DataFiles.sameFile(known, file)) {
                return;
            }
        }
        List<Path> spares = new ArrayList<>(latest.spares());
        spares.add(file);
        configs.put(name, latest.withMembers(latest.members(), spares, latest.remote()));
    }

    private static String rebuildNote(Raid5Array array) {
        for (Raid5Status.Member m : array.status().members()) {
            if (m.state() == Raid5Status.MemberState.REBUILDING) {
                return "; rebuilding member " + m.role() + " onto " + m.device();
            }
        }
        return "";
    }

    private static boolean hasBitmap(Raid5Array array) {
        return array.consistencyPolicy() == ConsistencyPolicy.BITMAP;
    }

    /** The set UUID of the md superblock {@code file} carries, as mdadm prints it, or null when it has none. */
    private static String setUuid(Path file) {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer block = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
            while (block.hasRemaining() && ch.read(block, Md1Superblock.OFFSET_BYTES + block.position()) > 0) {
                // read the whole block
            }
            if (block.hasRemaining()) {
                return null;
            }
            return Md1Superblock.formatUuid(Md1Superblock.decode(block.flip(), file.toString()).setUuid);
        } catch (IOException | IllegalArgumentException noSuperblock) {
            return null;
        }
    }

    /** Sets the stripe cache of {@code name} and keeps it as the operator's (across reshapes, and when saved). */
    synchronized void setStripeCacheSize(String name, int rows) {
        require(name).setStripeCacheSize(rows);
        configs.computeIfPresent(name, (n, ac) -> ac.withStripeCacheSize(rows));
    }

    /** Sets the sync speed floor and cap of {@code name} and keeps them as the operator's (across reshapes). */
    synchronized void setSyncSpeeds(String name, int minKibPerSecond, int maxKibPerSecond) {
        Raid5Array array = require(name);
        array.setSyncSpeedMin(minKibPerSecond);
        array.setSyncSpeedMax(maxKibPerSecond);
        syncSpeeds.put(name, new int[] {minKibPerSecond, maxKibPerSecond});
    }

    /** Sets check_parity_on_reads of {@code name} and keeps it as the operator's. */
    synchronized void setCheckParityOnReads(String name, boolean on) {
        require(name).setCheckParityOnReads(on);
        configs.computeIfPresent(name, (n, ac) -> ac.withCheckParityOnReads(on));
    }

    /**
     * Refuses a file that is a member or spare of an array (as the arrays are now), or backs a LUN, for the use
     * {@code purpose} names ("back LUN 3 of iqn...", "be a member of md1"). Files compare by path and, where both
     * exist, as the same file (links).
     */
    synchronized void refuseFileInUse(Path file, String purpose) {
        Path f = file.toAbsolutePath().normalize();
        for (ArrayConfig ac : running()) {
            for (Path member : ac.files()) {
                if (DataFiles.sameFile(member, f)) {
                    throw new IllegalArgumentException("file " + f + " is a member of array " + ac.name() + " and cannot "
                            + purpose + "; give it a file of its own; nothing changed");
                }
            }
        }
        for (LunStack s : luns.get()) {
            Path other = s.config().backing().file();
            if (other != null && DataFiles.sameFile(other, f)) {
                throw new IllegalArgumentException("file " + f + " backs " + s.controlPath() + " already and cannot "
                        + purpose + "; nothing changed");
            }
        }
    }

    private void refuseRemoteInUse(RemoteMemberConfig remote, String purpose) {
        for (ArrayConfig ac : running()) {
            if (ac.remote().find(remote.url().toString()) != null) {
                throw new IllegalArgumentException("the remote LUN " + remote.url() + " is a member of array "
                        + ac.name() + " and cannot be one of " + purpose + "; nothing changed");
            }
        }
    }

    /** The running arrays by name: a concurrent map, read by the status report and the LUN factory. */
    Map<String, Raid5Array> arrays() {
        return arrays;
    }

    /** Each running array's remote members and spares: a concurrent map, read by status, metrics and returns. */
    Map<String, List<RemoteBlockDevice>> remoteDevices() {
        return remoteDevices;
    }

    /** Arrays created (all zeros) in this start, for the LUN factory's new-key rule. */
    Set<String> createdAtStart() {
        return createdAtStart;
    }

    /** The running arrays as they are now, by name: what saveconfig writes. */
    synchronized List<ArrayConfig> running() {
        List<ArrayConfig> out = new ArrayList<>();
        for (Map.Entry<String, ArrayConfig> e : configs.entrySet()) {
            Raid5Array array = arrays.get(e.getKey());
            out.add(array == null ? e.getValue() : current(e.getKey()));
        }
        return List.copyOf(out);
    }

    /** The CHAP secret files of the arrays' remote members, each with what it is. */
    synchronized Map<Path, String> secretFiles() {
        Map<Path, String> out = new LinkedHashMap<>();
        for (ArrayConfig ac : configs.values()) {
            for (List<RemoteMemberConfig> list : List.of(ac.remote().members(), ac.remote().spares())) {
                for (RemoteMemberConfig r : list) {
                    if (r.chapSecretFile() != null) {
                        out.put(r.chapSecretFile(), "the CHAP secret file of " + ac.name() + "'s remote member " + r.url());
                    }
                }
            }
        }
        return out;
    }

    /** Closes every array clean; after the LUNs above were closed. Idempotent per array. */
    @Override
    public synchronized void close() {
        for (Map.Entry<String, Raid5Array> e : arrays.entrySet()) {
            try {
                e.getValue().close();
            } catch (IOException | RuntimeException ex) {
                log.error("closing array {} failed: {}", e.getKey(), ex.getMessage());
            }
        }
    }

    private void publish(ArrayConfig ac, StackBuilder.OpenedArray opened) {
        Raid5Array array = opened.array();
        String name = ac.name();
        if (ac.checkParityOnReads()) {
            array.setCheckParityOnReads(true);
        }
        configs.put(name, ac);
        arrays.put(name, array);
        if (!opened.remoteMembers().isEmpty()) {
            List<RemoteBlockDevice> devices = new CopyOnWriteArrayList<>(opened.remoteMembers());
            remoteDevices.put(name, devices);
            for (int i = 0; i < devices.size(); i++) {
                RemoteMemberReport.registerControl(registry, name, i, devices.get(i));
            }
        }
        ArrayControls.register(registry, name, array, new ArrayControls.Changes() {
            @Override
            public String add(String what) throws IOException {
                return autosave.changed(LiveArrays.this.add(name, what));   // saved outside this object's monitor
            }

            @Override
            public void stripeCacheSize(int rows) {
                setStripeCacheSize(name, rows);
            }

            @Override
            public void checkParityOnReads(boolean on) {
                setCheckParityOnReads(name, on);
            }

            @Override
            public void syncSpeeds(int minKibPerSecond, int maxKibPerSecond) {
                setSyncSpeeds(name, minKibPerSecond, maxKibPerSecond);
            }
        });
        array.addCapacityListener(size -> reshapeFinished(name, array));
        current(name);   // records the devices it holds from the start
    }

    /**
     * A reshape of {@code array} has finished (on its reshape thread): the description of the array lists its
     * members in role order and its spares, with the chunk it has now; the settings the operator made are applied
     * to the new geometry (md keeps them across a reshape); then the server is told.
     */
    private void reshapeFinished(String name, Raid5Array array) {
        ArrayConfig now;
        synchronized (this) {
            ArrayConfig ac = configs.get(name);
            if (ac == null || arrays.get(name) != array) {
                return;   // stopped meanwhile
            }
            now = current(name);
            configs.put(name, now);
            if (now.stripeCacheSize() > 0 && array.stripeCacheSize() != now.stripeCacheSize()) {
                array.setStripeCacheSize(now.stripeCacheSize());
            }
            if (now.checkParityOnReads() != array.checkParityOnReads()) {
                array.setCheckParityOnReads(now.checkParityOnReads());
            }
            int[] speeds = syncSpeeds.get(name);
            if (speeds != null) {
                array.setSyncSpeedMin(speeds[0]);
                array.setSyncSpeedMax(speeds[1]);
            }
        }
        reshaped.reshaped(array, now);
    }

    /** Array {@code name} as it is now ({@link #withShape}); the caller holds this object's monitor. */
    private ArrayConfig current(String name) {
        Raid5Status status = arrays.get(name).status();
        Set<String> seen = held.computeIfAbsent(name, n -> new HashSet<>());
        for (Raid5Status.Member m : status.members()) {
            if (m.device() != null) {
                seen.add(m.device());
            }
        }
        seen.addAll(status.spares());
        for (RemoteBlockDevice d : remoteDevices.getOrDefault(name, List.of())) {
            seen.add(d.name());
        }
        return withShape(configs.get(name), status, seen);
    }

    /**
     * {@code ac} with the members of {@code status} by role and its spares, files and remote LUNs each named as
     * configured where they were (a file found by its UUID in a member's directory by its own path), and its chunk.
     * A member removed (its role empty) is not listed. A configured member the array never held (not among {@code
     * held}: a file missing or a target down at start) stays as configured while a role is empty, so that a save
     * during the outage does not forget it; once its role was rebuilt onto another device it goes. Should fewer
     * than three members be left, the configured lists stay (a configuration needs three, and the array's
     * superblocks still name its roles).
     */
    static ArrayConfig withShape(ArrayConfig ac, Raid5Status status, Set<String> held) {
        List<Path> known = ac.files();
        List<Path> members = new ArrayList<>();
        List<RemoteMemberConfig> remoteMembers = new ArrayList<>();
        for (Raid5Status.Member m : status.members()) {
            if (m.device() != null) {
                place(m.device(), ac, known, members, remoteMembers);
            }
        }
        List<Path> spares = new ArrayList<>();
        List<RemoteMemberConfig> remoteSpares = new ArrayList<>();
        for (String spare : status.spares()) {
            place(spare, ac, known, spares, remoteSpares);
        }
        if (status.members().stream().anyMatch(m -> m.device() == null)) {
            for (Path f : ac.members()) {
                if (!members.contains(f) && held.stream().noneMatch(h -> DataFiles.sameFile(Path.of(h), f))) {
                    members.add(f);
                }
            }
            for (RemoteMemberConfig r : ac.remote().members()) {
                if (!remoteMembers.contains(r) && !held.contains(r.url().toString())) {
                    remoteMembers.add(r);
                }
            }
        }
        if (members.size() + remoteMembers.size() < 3) {
            members = ac.members();
            remoteMembers = ac.remote().members();
        }
        return ac.withMembers(members, spares, ac.remote().with(remoteMembers, remoteSpares))
                .withChunkBytes(status.chunkBytes());
    }

    private static void place(String device, ArrayConfig ac, List<Path> known, List<Path> files,
            List<RemoteMemberConfig> remotes) {
        RemoteMemberConfig remote = ac.remote().find(device);
        if (remote != null) {
            remotes.add(remote);
            return;
        }
        Path d = Path.of(device).toAbsolutePath().normalize();
        for (Path k : known) {
            if (DataFiles.sameFile(k, d)) {
                files.add(k);
                return;
            }
        }
        files.add(Path.of(device));
    }

    private Raid5Array require(String name) {
        Raid5Array a = arrays.get(name);
        if (a == null) {
            throw new IllegalArgumentException("no array " + name + " (arrays: " + String.join(", ", arrays.keySet()) + ")");
        }
        return a;
    }

    private static Raid5Options options(ArrayConfig ac) {
        return Raid5Options.defaults().withStripeCacheRows(ac.stripeCacheSize())
                .withStartDirtyDegraded(ac.startDirtyDegraded()).withBitmapChunkBytes(ac.bitmapChunkBytes());
    }
}
