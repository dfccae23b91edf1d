package io.stripestack.targetserver.server;

import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Status;
import io.stripestack.blockdev.Sizes;
import io.stripestack.targetserver.config.StripestackConfig.BackingConfig;
import io.stripestack.targetserver.config.StripestackConfig.ChapConfig;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import io.stripestack.targetserver.config.StripestackConfig.TargetConfig;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code stripestack ls}: the running server as a tree, like targetcli's {@code ls}: arrays, targets with their
 * LUNs, ACLs, CHAP users and sessions, and the portals. Paths are absolute, so the tree of a server restarted
 * from a saved file compares equal to the one it was saved from. Secrets never appear (CHAP shows user and
 * secret file). Stateless; the caller passes one consistent view.
 */
final class AdminTree {
    private AdminTree() {
    }

    static String render(Map<String, Raid5Array> arrays, List<TargetConfig> targets, Map<String, List<String>> sessions,
            List<InetSocketAddress> portals) {
        StringBuilder t = new StringBuilder("o- /\n");
        t.append("  o- arrays [").append(arrays.size()).append("]\n");
        for (Map.Entry<String, Raid5Array> e : arrays.entrySet()) {
            Raid5Status s = e.getValue().status();
            t.append("  |   o- ").append(e.getKey()).append(" [raid5, ").append(s.members().size()).append(" members, chunk ")
                    .append(s.chunkBytes() / 1024).append(" KiB, ").append(Sizes.format(s.sizeBytes())).append(", ")
                    .append(s.health().name().toLowerCase(Locale.ROOT)).append("]\n");
        }
        t.append("  o- targets [").append(targets.size()).append("]\n");
        for (TargetConfig target : targets) {
            List<String> nexuses = sessions.getOrDefault(target.iqn(), List.of());
            t.append("  |   o- ").append(target.iqn())
                    .append(target.alias().isEmpty() ? "" : " [alias " + target.alias() + "]").append('\n');
            t.append("  |   |   o- luns [").append(target.luns().size()).append("]\n");
            for (LunConfig lun : target.luns()) {
                t.append("  |   |   |   o- lun").append(lun.lun()).append(" [").append(backing(lun.backing()))
                        .append(lun.crypto() == null ? "" : lun.crypto().luks() ? ", luks" : ", crypt " + lun.crypto().cipher())
                        .append(lun.readOnly() ? ", read-only" : ", read-write").append("]\n");
            }
            t.append("  |   |   o- acls [").append(target.allowedInitiators().isEmpty() ? "none: any initiator may log in"
                    : Integer.toString(target.allowedInitiators().size())).append("]\n");
            for (String initiator : target.allowedInitiators()) {
                t.append("  |   |   |   o- ").append(initiator).append('\n');
            }
            t.append("  |   |   o- auth [").append(chap("chap", target.chap())).append(", ")
                    .append(chap("mutual chap", target.mutualChap())).append("]\n");
            t.append("  |   |   o- sessions [").append(nexuses.size()).append("]\n");
            for (String nexus : nexuses) {
                t.append("  |   |       o- ").append(nexus).append('\n');
            }
        }
        t.append("  o- portals [").append(portals.size()).append("]\n");
        for (InetSocketAddress p : portals) {
            String host = p.getAddress().getHostAddress();
            t.append("      o- ").append(host.contains(":") ? "[" + host + "]" : host).append(':').append(p.getPort()).append('\n');
        }
        return t.toString();
    }

    private static String backing(BackingConfig b) {
        if (b.array() != null) {
            return "array " + b.array();
        }
        if (b.ram()) {
            return "ram " + Sizes.format(b.createSize());
        }
        return "file " + b.file().toAbsolutePath().normalize();
    }

    private static String chap(String what, ChapConfig c) {
        return c == null ? "no " + what : what + " user " + c.user()
                + (c.secretFile() == null ? " (secret inline in the file)" : " (secret in " + c.secretFile().toAbsolutePath().normalize() + ")");
    }
}
