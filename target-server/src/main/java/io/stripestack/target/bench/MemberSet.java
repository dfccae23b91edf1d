package io.stripestack.target.bench;

import io.stripestack.blockdev.FileBlockDevice;
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

    private MemberSet(List<Path> paths, boolean direct) {
        this.paths = paths;
        this.direct = direct;
    }

    /** Creates {@code count} sparse files of {@code bytes} each named {@code prefix-N.img} in {@code dir}. */
    static MemberSet create(Path dir, String prefix, int count, long bytes, boolean direct) throws IOException {
        List<Path> paths = new ArrayList<>();
        MemberSet set = new MemberSet(paths, direct);
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

    /** Opens the first {@code count} files (with O_DIRECT when the set was created so). */
    List<FileBlockDevice> open(int count) throws IOException {
        List<FileBlockDevice> devices = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                devices.add(FileBlockDevice.open(paths.get(i), 512, direct, false));
            }
        } catch (IOException | RuntimeException e) {
            for (FileBlockDevice d : devices) {
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
