package io.stripestack.bench;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.testkit.PacedBlockDevice;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Sparse member files for one benchmark array, deleted again by {@link #close()}. Whoever opens them
 * (an array) owns the opened devices; close those first. Single-threaded.
 */
final class MemberSet implements Closeable {
    private final List<Path> paths;
    private final boolean direct;
    private final long bytesPerSecond;

    private MemberSet(List<Path> paths, boolean direct, long bytesPerSecond) {
        this.paths = paths;
        this.direct = direct;
        this.bytesPerSecond = bytesPerSecond;
    }

    /**
     * Creates {@code count} sparse files of {@code bytes} each named {@code prefix-N.img} in {@code dir}.
     *
     * @param bytesPerSecond pace each opened member like an independent disk of this bandwidth; 0 for none
     */
    static MemberSet create(Path dir, String prefix, int count, long bytes, boolean direct, long bytesPerSecond)
            throws IOException {
        List<Path> paths = new ArrayList<>();
        MemberSet set = new MemberSet(paths, direct, bytesPerSecond);
        try {
            for (int i = 0; i < count; i++) {
                Path p = dir.resolve(prefix + "-" + i + ".img");
                paths.add(p);
                FileBlockDevice.create(p, bytes, 512).close();
            }
        } catch (IOException | RuntimeException e) {
            set.close();
            throw e;
        }
        return set;
    }

    /** Opens the first {@code count} files (with O_DIRECT and paced when the set was created so). */
    List<BlockDevice> open(int count) throws IOException {
        List<BlockDevice> devices = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                FileBlockDevice file = FileBlockDevice.open(paths.get(i), 512, direct, false);
                devices.add(bytesPerSecond > 0 ? new PacedBlockDevice(file, bytesPerSecond) : file);
            }
        } catch (IOException | RuntimeException e) {
            for (BlockDevice d : devices) {
                d.close();
            }
            throw e;
        }
        return devices;
    }

    @Override
    public void close() throws IOException {
        for (Path p : paths) {
            Files.deleteIfExists(p);
        }
    }
}
