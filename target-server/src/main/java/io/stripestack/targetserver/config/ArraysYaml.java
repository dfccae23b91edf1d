package io.stripestack.targetserver.config;

import io.stripestack.remote.RemoteMemberOptions;
import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.config.StripestackConfig.RemoteMemberConfig;
import java.nio.file.Path;
import java.util.List;

/**
 * Writes one array of the running server as an entry of the {@code arrays:} section, in the keys
 * {@link ConfigLoader} reads: its member and spare files and remote LUNs, which the loader assembles at the next
 * start (the geometry is in their superblocks, so no {@code create_member_size}: a start that finds them gone
 * fails, naming them, instead of creating an empty array), the {@code remote_*} settings that differ from the
 * defaults and the stripe cache size an operator set. Stateless.
 */
final class ArraysYaml {
    private ArraysYaml() {
    }

    /** The entry of {@code a}, its key indented by {@code indent} spaces. */
    static String entry(ArrayConfig a, int indent, Path dataDir) {
        String in = " ".repeat(indent);
        StringBuilder y = new StringBuilder();
        y.append(in).append(TargetsYaml.quote(a.name())).append(":\n");
        y.append(in).append("  members: ").append(memberList(a.members(), a.remote().members(), dataDir)).append('\n');
        if (!a.spares().isEmpty() || !a.remote().spares().isEmpty()) {
            y.append(in).append("  spares: ").append(memberList(a.spares(), a.remote().spares(), dataDir)).append('\n');
        }
        if (a.stripeCacheSize() > 0) {
            y.append(in).append("  stripe_cache_size: ").append(a.stripeCacheSize()).append('\n');
        }
        if (a.checkParityOnReads()) {
            y.append(in).append("  check_parity_on_reads: true\n");
        }
        if (!a.remote().isEmpty()) {
            RemoteMemberOptions o = a.remote().options();
            RemoteMemberOptions d = RemoteMemberOptions.defaults();
            if (o.connections() != d.connections()) {
                y.append(in).append("  remote_connections: ").append(o.connections()).append('\n');
            }
            if (o.queueDepth() != d.queueDepth()) {
                y.append(in).append("  remote_queue_depth: ").append(o.queueDepth()).append('\n');
            }
            if (!o.retryTimeout().equals(d.retryTimeout())) {
                y.append(in).append("  remote_retry_timeout_seconds: ").append(o.retryTimeout().toSeconds()).append('\n');
            }
            if (!o.commandTimeout().equals(d.commandTimeout())) {
                y.append(in).append("  remote_command_timeout_seconds: ").append(o.commandTimeout().toSeconds())
                        .append('\n');
            }
            if (o.headerDigest() != d.headerDigest()) {
                y.append(in).append("  remote_header_digest: ").append(o.headerDigest().name().toLowerCase()).append('\n');
            }
            if (o.dataDigest() != d.dataDigest()) {
                y.append(in).append("  remote_data_digest: ").append(o.dataDigest().name().toLowerCase()).append('\n');
            }
            if (!o.initiatorIqn().equals(d.initiatorIqn())) {
                y.append(in).append("  remote_initiator_name: ").append(TargetsYaml.quote(o.initiatorIqn())).append('\n');
            }
        }
        return y.toString();
    }

    /**
     * {@code files} then {@code remotes} as a flow list, each file relative to {@code dataDir} where it lies below
     * it, each remote LUN as its URL or, with CHAP, {@code {url: ..., chap_secret_file: ...}}. Assembly places
     * members by the roles in their superblocks, so the order within the list does not matter.
     */
    static String memberList(List<Path> files, List<RemoteMemberConfig> remotes, Path dataDir) {
        StringBuilder y = new StringBuilder("[");
        for (Path file : files) {
            y.append(y.length() == 1 ? "" : ", ").append(TargetsYaml.path(file, dataDir));
        }
        for (RemoteMemberConfig r : remotes) {
            y.append(y.length() == 1 ? "" : ", ");
            if (r.chapSecretFile() == null) {
                y.append(TargetsYaml.quote(r.url().toString()));
            } else {
                y.append("{url: ").append(TargetsYaml.quote(r.url().toString())).append(", chap_secret_file: ")
                        .append(TargetsYaml.path(r.chapSecretFile(), dataDir)).append('}');
            }
        }
        return y.append(']').toString();
    }
}
