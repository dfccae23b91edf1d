package io.stripestack.targetserver.config;

import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import java.nio.file.Path;
import java.util.List;

/**
 * Writes one array of the running server as an entry of the {@code arrays:} section, in the keys
 * {@link ConfigLoader} reads: its member and spare files, which the loader assembles at the next start (the
 * geometry is in their superblocks, so no {@code create_member_size}: a start that finds them gone fails, naming
 * them, instead of creating an empty array). Arrays with remote members are configured by hand and kept as the
 * file has them; one that reaches here is refused. Stateless.
 */
final class ArraysYaml {
    private ArraysYaml() {
    }

    /** The entry of {@code a}, its key indented by {@code indent} spaces. */
    static String entry(ArrayConfig a, int indent, Path dataDir) {
        if (!a.remote().isEmpty()) {
            throw new IllegalArgumentException("array " + a.name() + " has remote members, which saveconfig does not"
                    + " write; keep its entry in the arrays: section as written by hand");
        }
        String in = " ".repeat(indent);
        StringBuilder y = new StringBuilder();
        y.append(in).append(TargetsYaml.quote(a.name())).append(":\n");
        y.append(in).append("  members: ").append(fileList(a.members(), dataDir)).append('\n');
        if (!a.spares().isEmpty()) {
            y.append(in).append("  spares: ").append(fileList(a.spares(), dataDir)).append('\n');
        }
        return y.toString();
    }

    /** {@code files} as a flow list, each relative to {@code dataDir} where it lies below it. */
    static String fileList(List<Path> files, Path dataDir) {
        StringBuilder y = new StringBuilder("[");
        for (int i = 0; i < files.size(); i++) {
            y.append(i == 0 ? "" : ", ").append(TargetsYaml.path(files.get(i), dataDir));
        }
        return y.append(']').toString();
    }
}
