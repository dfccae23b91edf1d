package io.stripestack.targetserver.server;

import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Files;
import io.stripestack.raid5.Raid5Options;
import io.stripestack.raid5.Raid5Status;
import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.control.ControlRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running server's RAID-5 arrays: assembled or created at start-up from the configuration, and created
 * (from new member files, like {@code mdadm --create}, or assembled from existing ones) or stopped at run time by
 * the administration. Stopping an array closes it clean and leaves its member files where they are. Every
 * refusal is an {@link IllegalArgumentException} or {@link IOException} naming what and why, thrown before
 * anything changed.
 *
 * <p>Concurrency: changes are synchronized on this object and come from the starting thread, then from the admin
 * worker only (the one thread that also changes {@link LiveTargets}, so a LUN cannot be built on an array while it
 * is stopped). The array map handed out by {@link #arrays} is a concurrent map (listed by name) that the status
 * report, the metrics endpoint and the LUN factory read at any time; an array is put in it once open and taken
 * out before it is closed. {@link #running} returns immutable configurations for saving.
 */
final class LiveArrays implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LiveArrays.class);
    /** Names usable as a control path's first part and as a YAML key without quoting surprises. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,63}");

    private final Map<String, Raid5Array> arrays = new ConcurrentSkipListMap<>();
    private final Map<String, ArrayConfig> configs = new ConcurrentSkipListMap<>();
    /** Arrays created (not assembled) at start-up: their contents are all zeros. */
    private final Set<String> createdAtStart = new HashSet<>();
    private final List<LunStack> luns;
    private final ControlRegistry registry;
    private final Path dataDir;
    private final Reshaped reshaped;

    /** What the server does when a reshape of an array has finished: its LUNs and its configuration entry follow. */
    interface Reshaped {
        /** Called on the array's reshape thread, without this object's monitor. */
        void reshaped(Raid5Array array, ArrayConfig now);
    }

    /**
     * @param luns     the server's LUN stacks (copy on write), read to find the LUN that exports an array
     * @param reshaped told when a reshape of a running array has finished, with the array's members and spares by
     *                 then (the spares it grew onto are members)
     */
    LiveArrays(List<LunStack> luns, ControlRegistry registry, Path dataDir, Reshaped reshaped) {
        this.luns = luns;
        this.registry = registry;
        this.dataDir = dataDir;
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
        publish(ac, opened.array());
        return opened;
    }

    /**
     * {@code array create}: all member files exist, the array is assembled from them (a spare that does not
     * exist is created and added); none exists, it is created with members of {@code ac.createMemberSize()}
     * bytes. Refused: a name taken or not usable, a member given twice, a member file that is a member or spare of
     * another array or backs a LUN, some members existing and others not, a new array without a member size.
     */
    synchronized String create(ArrayConfig ac) throws IOException {
        if (!NAME.matcher(ac.name()).matches()) {
            throw new IllegalArgumentException("'" + ac.name() + "' is not an array name (letters, digits, '_', '.', '-';"
                    + " up to 64, e.g. md1); nothing changed");
        }
        if (arrays.containsKey(ac.name())) {
            throw new IllegalArgumentException("array " + ac.name() + " exists already; nothing changed");
        }
        if (ac.members().size() < 3) {
            throw new IllegalArgumentException("RAID-5 needs at least 3 members, " + ac.members().size()
                    + " given; nothing changed");
        }
        List<Path> files = new ArrayList<>(ac.members());
        files.addAll(ac.spares());
        Set<Path> seen = new HashSet<>();
        for (Path f : files) {
            if (!seen.add(f.toAbsolutePath().normalize())) {
                throw new IllegalArgumentException("file " + f + " is given twice; nothing changed");
            }
            refuseFileInUse(f, "be a member of " + ac.name());
        }
        long existing = ac.members().stream().filter(Files::exists).count();
        if (existing > 0 && existing < ac.members().size()) {
            throw new IllegalArgumentException("array " + ac.name() + ": " + existing + " of " + ac.members().size()
                    + " member files exist; give all existing members to assemble an array, or only new files to"
                    + " create one; nothing changed");
        }
        if (existing == 0 && ac.createMemberSize() <= 0) {
            throw new IllegalArgumentException("array " + ac.name() + ": none of its member files exists; give"
                    + " --member-size SIZE to create a new array on them; nothing changed");
        }
        if (existing > 0 && ac.createMemberSize() > 0) {
            throw new IllegalArgumentException("array " + ac.name() + ": its member files exist, and --member-size"
                    + " creates new ones; drop --member-size to assemble them; nothing changed");
        }
        List<Path> absent = files.stream().filter(f -> !Files.exists(f)).toList();
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
        publish(ac, array);
        log.info("array {} {} at run time: {}", ac.name(), opened.created() ? "created" : "assembled",
                array.status().mdstat().replace("\n", " "));
        return (opened.created() ? "created" : "assembled") + " array " + ac.name() + ": "
                + array.status().mdstat().replace("\n", "\n  ");
    }

    /**
     * {@code array delete}: refused while a LUN exports the array or when it has remote members (their
     * reconnection runs with the server; remove them from the file and restart). Otherwise its attributes go,
     * then it is closed clean; its member files stay.
     */
    synchronized String delete(String name) {
        Raid5Array array = require(name);
        for (LunStack s : luns) {
            if (name.equals(s.config().backing().array())) {
                throw new IllegalArgumentException("array " + name + " is exported by " + s.controlPath()
                        + "; delete that LUN first; nothing changed");
            }
        }
        if (!configs.get(name).remote().isEmpty()) {
            throw new IllegalArgumentException("array " + name + " has members on remote targets, which the server"
                    + " reconnects while it runs; remove it from the configuration file and restart; nothing changed");
        }
        arrays.remove(name);
        configs.remove(name);
        registry.unregisterAll(name + "/");
        try {
            array.close();
        } catch (IOException | RuntimeException e) {
            log.error("closing array {} failed: {}", name, e.getMessage());
            return "stopped array " + name + ", but closing it failed: " + e.getMessage();
        }
        log.info("array {} stopped at run time", name);
        return "stopped array " + name + " (closed clean; its member files are left as they are)";
    }

    /**
     * {@code ctl set NAME/add FILE}: a file in use (another array's member or spare, a LUN's file) is refused by
     * name; else it is added as a hot spare (created when missing) and counted as the array's from then on.
     */
    private synchronized void addSpare(String name, Path spare) throws IOException {
        ArrayConfig ac = configs.get(name);
        Raid5Array array = arrays.get(name);
        if (ac == null || array == null) {
            throw new IllegalArgumentException("no array " + name);
        }
        refuseFileInUse(spare, "be added to " + name);
        Raid5Files.addSpare(array, spare, 0, !ac.createSparse());
        List<Path> spares = new ArrayList<>(ac.spares());
        spares.add(spare);
        configs.put(name, new ArrayConfig(ac.name(), ac.members(), List.copyOf(spares), ac.chunkBytes(), ac.layout(),
                ac.createMemberSize(), ac.createSparse(), ac.stripeCacheSize(), ac.checkParityOnReads(), ac.direct(),
                ac.startDirtyDegraded(), ac.consistencyPolicy(), ac.bitmapChunkBytes(), ac.remote()));
    }

    /**
     * Refuses a file that is a member or spare of an array, or backs a LUN, for the use {@code purpose}
     * names ("back LUN 3 of iqn...", "be a member of md1"). Files compare by path and, where both exist, as the
     * same file (links).
     */
    void refuseFileInUse(Path file, String purpose) {
        Path f = file.toAbsolutePath().normalize();
        for (ArrayConfig ac : configs.values()) {
            List<Path> used = new ArrayList<>(ac.members());
            used.addAll(ac.spares());
            for (Path member : used) {
                if (sameFile(member, f)) {
                    throw new IllegalArgumentException("file " + f + " is a member of array " + ac.name() + " and cannot "
                            + purpose + "; give it a file of its own; nothing changed");
                }
            }
        }
        for (LunStack s : luns) {
            Path other = s.config().backing().file();
            if (other != null && sameFile(other, f)) {
                throw new IllegalArgumentException("file " + f + " backs " + s.controlPath() + " already and cannot "
                        + purpose + "; nothing changed");
            }
        }
    }

    private static boolean sameFile(Path a, Path b) {
        Path na = a.toAbsolutePath().normalize();
        if (na.equals(b)) {
            return true;
        }
        try {
            return Files.exists(na) && Files.exists(b) && Files.isSameFile(na, b);
        } catch (IOException e) {
            return false;
        }
    }

    /** The running arrays by name: a concurrent map, read by the status report and the LUN factory. */
    Map<String, Raid5Array> arrays() {
        return arrays;
    }

    /** Arrays created (all zeros) in this start, for the LUN factory's new-key rule. */
    Set<String> createdAtStart() {
        return createdAtStart;
    }

    /** The running arrays as configuration, by name. */
    synchronized List<ArrayConfig> running() {
        return List.copyOf(configs.values());
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

    private void publish(ArrayConfig ac, Raid5Array array) {
        array.setCheckParityOnReads(ac.checkParityOnReads());
        configs.put(ac.name(), ac);
        arrays.put(ac.name(), array);
        ArrayControls.register(registry, ac, array, dataDir, spare -> addSpare(ac.name(), spare));
        array.addCapacityListener(size -> reshapeFinished(ac.name(), array));
    }

    /**
     * A reshape of {@code array} has finished (on its reshape thread): the configuration kept for it lists its
     * members in role order and its spares, with the chunk it has now; then the server is told.
     */
    private void reshapeFinished(String name, Raid5Array array) {
        ArrayConfig now;
        synchronized (this) {
            ArrayConfig ac = configs.get(name);
            if (ac == null || arrays.get(name) != array) {
                return;   // stopped meanwhile
            }
            now = withShape(ac, array.status());
            configs.put(name, now);
        }
        reshaped.reshaped(array, now);
    }

    /**
     * {@code ac} with the members of {@code status} by role and its spares, each named by the configured path of
     * the same file where there is one (a file found by its UUID in a member's directory by its own path).
     */
    static ArrayConfig withShape(ArrayConfig ac, Raid5Status status) {
        List<Path> known = new ArrayList<>(ac.members());
        known.addAll(ac.spares());
        List<Path> members = new ArrayList<>();
        for (Raid5Status.Member m : status.members()) {
            if (m.device() != null) {
                members.add(configured(Path.of(m.device()), known));
            }
        }
        List<Path> spares = new ArrayList<>();
        for (String spare : status.spares()) {
            spares.add(configured(Path.of(spare), known));
        }
        return new ArrayConfig(ac.name(), List.copyOf(members), List.copyOf(spares), status.chunkBytes(), ac.layout(),
                ac.createMemberSize(), ac.createSparse(), ac.stripeCacheSize(), ac.checkParityOnReads(), ac.direct(),
                ac.startDirtyDegraded(), ac.consistencyPolicy(), ac.bitmapChunkBytes(), ac.remote());
    }

    private static Path configured(Path device, List<Path> known) {
        Path d = device.toAbsolutePath().normalize();
        for (Path k : known) {
            if (sameFile(k, d)) {
                return k;
            }
        }
        return device;
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
