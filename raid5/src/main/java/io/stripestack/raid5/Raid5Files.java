package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Create and assemble arrays whose members are files (or block devices) given by path: what the CLI's
 * {@code stripestack create} and {@code serve} call. Stateless.
 */
public final class Raid5Files {
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
            return Raid5Array.create(devices, config, options, true);
        } catch (IOException | RuntimeException e) {
            for (BlockDevice d : devices) {
                d.close();
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
        List<BlockDevice> devices = new ArrayList<>();
        List<String> missing = new ArrayList<>();
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
}
