package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Create and assemble arrays whose members are files (or block devices) given by path: what the CLI's
 * {@code stripestack create} and {@code serve} call. Stateless.
 */
public final class Raid5Files {
    private static final Logger LOG = LoggerFactory.getLogger(Raid5Files.class);

    private Raid5Files() {
    }

    /**
     * Creates {@code paths.size()} new sparse member files of {@code memberBytes} each (refusing to touch
     * an existing file) and a new array on them. The fresh files read as zeros, so parity is consistent
     * without an initial pass.
     */
    public static Raid5Array create(List<Path> paths, long memberBytes, Raid5Config config, Raid5Options options)
            throws IOException {
        return create(paths, memberBytes, config, options, false);
    }

    /**
     * As {@link #create(List, long, Raid5Config, Raid5Options)}; with {@code allocate} the member files are
     * written with zeros first, so their file system cannot run out of space under the array later (see
     * {@link FileBlockDevice#create(Path, long, int, boolean)}), like md's initial resync writes every member.
     */
    public static Raid5Array create(List<Path> paths, long memberBytes, Raid5Config config, Raid5Options options,
                                    boolean allocate) throws IOException {
        return create(paths, memberBytes, List.of(), config, options, allocate);
    }

    /**
     * As {@link #create(List, long, Raid5Config, Raid5Options, boolean)}, with {@code openedDevices} (members
     * opened by the caller, e.g. LUNs on remote targets) after the files, used whole. Their contents are
     * unknown, so with any of them the new array computes its parity once before it returns. The array takes
     * the opened devices, and closes them if the creation fails.
     */
    public static Raid5Array create(List<Path> paths, long memberBytes, List<? extends BlockDevice> openedDevices,
                                    Raid5Config config, Raid5Options options, boolean allocate) throws IOException {
        for (Path p : paths) {
            if (Files.exists(p)) {
                throw new IOException(p + ": already exists; remove it to create a new array there, or assemble "
                        + "the existing array");
            }
        }
        if (allocate) {
            requireSpaceForAll(paths, memberBytes);
        }
        List<BlockDevice> devices = new ArrayList<>();
        try {
            for (Path p : paths) {
                devices.add(FileBlockDevice.create(p, memberBytes, 512, allocate));
            }
            devices.addAll(openedDevices);
            return Raid5Array.create(devices, config, options, openedDevices.isEmpty());
        } catch (IOException | RuntimeException e) {
            for (BlockDevice d : devices) {
                d.close();
            }
            for (BlockDevice d : openedDevices) {
                if (!devices.contains(d)) {
                    d.close();
                }
            }
            // The files are ours (none existed): a half-created array would be taken for a broken one next time.
            for (Path p : paths) {
                Files.deleteIfExists(p);
            }
            throw e;
        }
    }

    /** Refuses before writing anything when the members' file systems cannot hold all of them. */
    private static void requireSpaceForAll(List<Path> paths, long memberBytes) throws IOException {
        Map<FileStore, Long> needed = new LinkedHashMap<>();
        Map<FileStore, Path> example = new HashMap<>();
        for (Path p : paths) {
            Path dir = p.toAbsolutePath().getParent();
            Files.createDirectories(dir);
            FileStore store = Files.getFileStore(dir);
            needed.merge(store, memberBytes, Long::sum);
            example.putIfAbsent(store, dir);
        }
        for (Map.Entry<FileStore, Long> e : needed.entrySet()) {
            Path dir = example.get(e.getKey());
            FileBlockDevice.requireFreeSpace(dir, e.getValue(), "the members in " + dir);
        }
    }

    /**
     * Adds the file at {@code path} to {@code array} as a spare (see {@link Raid5Array#addSpare}): an
     * existing file or block device is used as it is (its old contents are overwritten); a missing one
     * is created sparse with {@code bytes} bytes, or {@link Raid5Array#memberBytes()} when {@code bytes}
     * is 0.
     */
    public static void addSpare(Raid5Array array, Path path, long bytes) throws IOException {
        addSpare(array, path, bytes, false);
    }

    /** As {@link #addSpare(Raid5Array, Path, long)}; a missing file is created allocated if {@code allocate}. */
    public static void addSpare(Raid5Array array, Path path, long bytes, boolean allocate) throws IOException {
        BlockDevice device = Files.exists(path) ? FileBlockDevice.open(path, 512, false, false)
                : FileBlockDevice.create(path, bytes > 0 ? bytes : array.memberBytes(), 512, allocate);
        try {
            array.addSpare(device);
        } catch (IOException | RuntimeException e) {
            device.close();
            throw e;
        }
    }

    /**
     * Assembles the array on {@code paths} (any order). Paths that do not exist are reported as missing;
     * with one missing the array starts degraded (if the options allow).
     *
     * @param direct open members with O_DIRECT
     */
    public static Raid5Array assemble(List<Path> paths, Raid5Options options, boolean direct) throws IOException {
        return assemble(paths, List.of(), List.of(), options, direct);
    }

    private static Raid5Array assemble(List<Path> paths, List<? extends BlockDevice> openedDevices,
                                       List<String> unreachable, Raid5Options options, boolean direct) throws IOException {
        List<BlockDevice> devices = new ArrayList<>(openedDevices);
        List<String> missing = new ArrayList<>(unreachable);
        try {
            for (Path p : paths) {
                if (Files.exists(p)) {
                    devices.add(FileBlockDevice.open(p, 512, direct, false));
                } else {
                    missing.add(p.toString());
                }
            }
        } catch (IOException | RuntimeException e) {
            for (BlockDevice d : devices) {
                d.close();
            }
            throw e;
        }
        return Raid5Assembler.assemble(devices, missing, options);
    }

    /**
     * Assembles the array on {@code paths} together with every other regular file in {@code searchDirs}
     * (not recursively) whose md superblock carries the same array UUID, as md finds members by UUID
     * rather than by name: a spare added at run time and rebuilt into the array is found again at the next
     * start although no list names it. The UUID is the one most of {@code paths}' superblocks carry
     * (newest events on a tie); with none readable this is {@link #assemble(List, Raid5Options, boolean)}.
     * The assembler then places every file by its role in the newest superblock, as always (stale,
     * faulty and foreign ones reported and not used): md's rule, a device is a member when its superblock says
     * so and it is given, so a member file renamed in its directory is still used, and the log names it and
     * its role once the assembly is done (and a listed file that is not found is not said to leave the array
     * degraded when every role is held). A found file whose device UUID is also that of a
     * listed file or of another found file with at least as many events is a copy of that member: it is
     * not used (WARN). A found file that the newest listed superblock marks faulty, with fewer events, is a member
     * replaced since: it is left out (INFO), not reported as a problem of the array.
     */
    public static Raid5Array assemble(List<Path> paths, Collection<Path> searchDirs, Raid5Options options,
                                      boolean direct) throws IOException {
        return assemble(paths, searchDirs, List.of(), List.of(), options, direct);
    }

    /**
     * As {@link #assemble(List, Collection, Raid5Options, boolean)}, with {@code openedDevices} (candidates the
     * caller opened, e.g. LUNs on remote targets; the array takes them, and assembly closes the ones it does not
     * use) and {@code unreachable} (members the caller could not open, reported as missing).
     */
    public static Raid5Array assemble(List<Path> paths, Collection<Path> searchDirs,
                                      List<? extends BlockDevice> openedDevices, List<String> unreachable,
                                      Raid5Options options, boolean direct) throws IOException {
        Map<Path, Md1Superblock> listed = new LinkedHashMap<>();
        Set<Path> known = new LinkedHashSet<>();
        for (Path p : paths) {
            known.add(p.toAbsolutePath().normalize());
            Md1Superblock sb = readSuperblock(p);
            if (sb != null) {
                listed.put(p, sb);
            }
        }
        byte[] uuid = majorityUuid(listed.values());
        if (uuid == null) {
            return assemble(paths, openedDevices, unreachable, options, direct);
        }
        Map<Path, Md1Superblock> found = new LinkedHashMap<>();
        for (Path dir : new LinkedHashSet<>(searchDirs)) {
            for (Path file : regularFiles(dir)) {
                if (known.add(file.toAbsolutePath().normalize()) && !isSameAsAny(file, paths)) {
                    Md1Superblock sb = readSuperblock(file);
                    if (sb != null && Arrays.equals(sb.setUuid, uuid)) {
                        found.put(file, sb);
                    }
                }
            }
        }
        List<Path> all = new ArrayList<>(paths);
        String array = "array '" + listed.values().iterator().next().setName + "' (" + Md1Superblock.formatUuid(uuid) + ")";
        Md1Superblock newest = null;
        for (Md1Superblock sb : listed.values()) {
            if (Arrays.equals(sb.setUuid, uuid) && (newest == null || sb.events > newest.events)) {
                newest = sb;
            }
        }
        for (Map.Entry<Path, Md1Superblock> f : found.entrySet()) {
            Md1Superblock sb = f.getValue();
            if (sb.devNumber < newest.devRoles.length && newest.devRoles[sb.devNumber] == Md1Superblock.ROLE_FAULTY
                    && sb.events < newest.events) {
                // a member replaced since (failed, removed, rebuilt onto another): no list names it, the array
                // never uses it again; not a problem of the array's
                LOG.info("{}: {} is a former member (device {}, marked faulty) that no list names; not used", array,
                        f.getKey(), sb.devNumber);
                continue;
            }
            Path original = copyOf(f.getKey(), sb, listed, found);
            if (original != null) {
                LOG.warn("{}: {} carries the superblock of member device {} like {} (events {}); it is a copy and "
                        + "not used -- move it away from the array's members", array, f.getKey(), sb.devNumber,
                        original, sb.events);
                continue;
            }
            all.add(f.getKey());
        }
        Raid5Array assembled = assemble(all, openedDevices, unreachable, options, direct);
        for (Path f : found.keySet()) {
            if (all.contains(f)) {
                LOG.warn("{}: {} is not in the configured lists; {}", array, f, whatBecameOf(f, assembled.status()));
            }
        }
        return assembled;
    }

    /** What the assembly made of a file found by its superblock: which role or spare, or not used. */
    private static String whatBecameOf(Path file, Raid5Status status) {
        String name = file.toString();
        for (Raid5Status.Member m : status.members()) {
            if (name.equals(m.device())) {
                return "its superblock makes it member " + m.role() + " (" + m.state().name().toLowerCase(Locale.ROOT)
                        + "), and it is used as such -- name it in the configuration (saveconfig does), or move it out "
                        + "of " + file.toAbsolutePath().getParent() + " to take it out of use";
            }
        }
        if (status.spares().contains(name)) {
            return "its superblock belongs to this array, and it is used as a spare -- name it in the configuration "
                    + "(saveconfig does), or move it out of " + file.toAbsolutePath().getParent() + " to take it out of use";
        }
        return "its superblock belongs to this array, but it is not used (see the assembly's report above)";
    }

    /** The listed or earlier-found file that {@code file} is a copy of (same device UUID, events >= its), or null. */
    private static Path copyOf(Path file, Md1Superblock sb, Map<Path, Md1Superblock> listed,
                               Map<Path, Md1Superblock> found) {
        for (Map.Entry<Path, Md1Superblock> l : listed.entrySet()) {
            if (Arrays.equals(l.getValue().deviceUuid, sb.deviceUuid) && l.getValue().events >= sb.events) {
                return l.getKey();
            }
        }
        for (Map.Entry<Path, Md1Superblock> other : found.entrySet()) {
            if (other.getKey().equals(file)) {
                continue;
            }
            Md1Superblock o = other.getValue();
            if (Arrays.equals(o.deviceUuid, sb.deviceUuid)
                    && (o.events > sb.events || (o.events == sb.events && other.getKey().compareTo(file) < 0))) {
                return other.getKey();
            }
        }
        return null;
    }

    /** The set UUID most superblocks carry; on a tie the one whose newest superblock has most events. */
    private static byte[] majorityUuid(Collection<Md1Superblock> sbs) {
        byte[] best = null;
        int bestVotes = 0;
        long bestEvents = Long.MIN_VALUE;
        for (Md1Superblock candidate : sbs) {
            int votes = 0;
            long newest = Long.MIN_VALUE;
            for (Md1Superblock other : sbs) {
                if (other.sameSet(candidate)) {
                    votes++;
                    newest = Math.max(newest, other.events);
                }
            }
            if (votes > bestVotes || (votes == bestVotes && newest > bestEvents)) {
                best = candidate.setUuid;
                bestVotes = votes;
                bestEvents = newest;
            }
        }
        return best;
    }

    /** The regular files directly in {@code dir}, by name; none when it does not exist or cannot be listed. */
    private static Set<Path> regularFiles(Path dir) {
        Set<Path> files = new TreeSet<>();
        if (!Files.isDirectory(dir)) {
            return files;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path p : entries) {
                if (Files.isRegularFile(p)) {
                    files.add(p);
                }
            }
        } catch (IOException e) {
            LOG.warn("{}: cannot list it to look for array members: {}", dir, e.getMessage());
        }
        return files;
    }

    private static boolean isSameAsAny(Path file, List<Path> paths) {
        for (Path p : paths) {
            try {
                if (Files.exists(p) && Files.isSameFile(file, p)) {
                    return true;
                }
            } catch (IOException e) {
                // cannot tell: treat as different; the assembler reports a true duplicate
            }
        }
        return false;
    }

    /** The md superblock of a file, read without opening it as a member (no lock); null if it has none. */
    private static Md1Superblock readSuperblock(Path file) {
        try (FileChannel ch = FileChannel.open(file)) {
            if (ch.size() < Md1Superblock.OFFSET_BYTES + Md1Superblock.BLOCK_BYTES) {
                return null;
            }
            ByteBuffer block = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
            while (block.hasRemaining() && ch.read(block, Md1Superblock.OFFSET_BYTES + block.position()) > 0) {
                // read the whole block
            }
            return block.hasRemaining() ? null : Md1Superblock.decode(block.flip(), file.toString());
        } catch (IOException | IllegalArgumentException e) {
            return null;
        }
    }
}
