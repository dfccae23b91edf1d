package io.stripestack.raid5;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Member file names of test arrays: {@code dir/PREFIX0.img .. dir/PREFIX(n-1).img}. */
final class MemberFiles {
    private MemberFiles() {
    }

    static List<Path> paths(Path dir, String prefix, int n) {
        List<Path> paths = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            paths.add(dir.resolve(prefix + i + ".img"));
        }
        return paths;
    }
}
