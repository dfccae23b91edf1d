package io.stripestack.targetserver.config;

import io.stripestack.targetserver.config.StripestackConfig.BackingConfig;
import io.stripestack.targetserver.config.StripestackConfig.ChapConfig;
import io.stripestack.targetserver.config.StripestackConfig.CryptoConfig;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import io.stripestack.targetserver.config.StripestackConfig.ReadaheadConfig;
import io.stripestack.targetserver.config.StripestackConfig.TargetConfig;
import java.nio.file.Path;
import java.util.List;

/**
 * Writes targets as the {@code targets:} section of a configuration file, in the keys {@link ConfigLoader}
 * reads (docs/configuration.md), so that the section loads back to the same targets. Paths under the data
 * directory are written relative to it, others absolute. CHAP appears as user and {@code secret_file}, never as a
 * secret: a target whose secret is inline in the configuration is refused, naming the target. Stateless.
 */
public final class TargetsYaml {
    private TargetsYaml() {
    }

    public static String render(List<TargetConfig> targets, Path dataDir) {
        if (targets.isEmpty()) {
            return "targets: []\n";
        }
        StringBuilder y = new StringBuilder("targets:\n");
        for (TargetConfig t : targets) {
            y.append("  - iqn: ").append(quote(t.iqn())).append('\n');
            if (t.alias() != null && !t.alias().isEmpty()) {
                y.append("    alias: ").append(quote(t.alias())).append('\n');
            }
            if (!t.allowedInitiators().isEmpty()) {
                y.append("    allowed_initiators:\n");
                for (String initiator : t.allowedInitiators()) {
                    y.append("      - ").append(quote(initiator)).append('\n');
                }
            }
            chap(y, "chap", t.iqn(), t.chap(), dataDir);
            chap(y, "mutual_chap", t.iqn(), t.mutualChap(), dataDir);
            if (t.luns().isEmpty()) {
                y.append("    luns: []\n");
                continue;
            }
            y.append("    luns:\n");
            for (LunConfig l : t.luns()) {
                lun(y, l, dataDir);
            }
        }
        return y.toString();
    }

    private static void chap(StringBuilder y, String key, String iqn, ChapConfig c, Path dataDir) {
        if (c == null) {
            return;
        }
        if (c.secretFile() == null) {
            throw new IllegalArgumentException("target " + iqn + ": its " + key + " secret is inline in the configuration,"
                    + " and saveconfig writes secrets to no file; put it in a secret_file (chmod 600) or set it with"
                    + " 'stripestack chap set', then save again");
        }
        y.append("    ").append(key).append(": {user: ").append(quote(c.user())).append(", secret_file: ")
                .append(path(c.secretFile(), dataDir)).append("}\n");
    }

    private static void lun(StringBuilder y, LunConfig l, Path dataDir) {
        y.append("      - lun: ").append(l.lun()).append('\n');
        BackingConfig b = l.backing();
        if (b.array() != null) {
            y.append("        array: ").append(quote(b.array())).append('\n');
        } else if (b.ram()) {
            y.append("        ram_size: ").append(b.createSize()).append('\n');
        } else {
            y.append("        file: ").append(path(b.file(), dataDir)).append('\n');
            if (b.createSize() > 0) {
                y.append("        create_size: ").append(b.createSize()).append('\n');
            }
        }
        if (l.readOnly()) {
            y.append("        read_only: true\n");
        }
        if (l.serial() != null) {
            y.append("        serial: ").append(quote(l.serial())).append('\n');
        }
        ReadaheadConfig r = l.readahead();
        if (r.readAheadKb() >= 0 || r.belowCrypto()) {
            y.append("        readahead: {read_ahead_kb: ").append(r.readAheadKb() < 0 ? "auto" : Integer.toString(r.readAheadKb()))
                    .append(", placement: ").append(r.belowCrypto() ? "below-crypto" : "top").append("}\n");
        }
        if (l.crypto() != null) {
            crypto(y, l.crypto(), dataDir);
        }
    }

    private static void crypto(StringBuilder y, CryptoConfig c, Path dataDir) {
        y.append("        crypto:\n");
        String in = "          ";
        if (c.luks()) {
            y.append(in).append("luks: true\n");
        } else {
            y.append(in).append("cipher: ").append(quote(c.cipher())).append('\n');
            y.append(in).append("key_size: ").append(c.keyBits()).append('\n');
            y.append(in).append("hash: ").append(quote(c.hash())).append('\n');
            y.append(in).append("offset: ").append(c.offsetSectors()).append('\n');
            y.append(in).append("skip: ").append(c.skipSectors()).append('\n');
            y.append(in).append("sector_size: ").append(c.sectorSize()).append('\n');
            y.append(in).append("iv_large_sectors: ").append(c.ivLargeSectors()).append('\n');
            if (c.createKey()) {
                y.append(in).append("create_key: true\n");
            }
        }
        if (c.keyFile() != null) {
            y.append(in).append("key_file: ").append(path(c.keyFile(), dataDir)).append('\n');
        } else {
            y.append(in).append("passphrase_file: ").append(path(c.passphraseFile(), dataDir)).append('\n');
        }
        if (c.allowDiscards()) {
            y.append(in).append("allow_discards: true\n");
        }
    }

    /** Relative to the data directory when under it (the loader resolves it there), else absolute. */
    static String path(Path p, Path dataDir) {
        Path absolute = p.toAbsolutePath().normalize();
        Path base = dataDir.toAbsolutePath().normalize();
        return quote(absolute.startsWith(base) ? base.relativize(absolute).toString() : absolute.toString());
    }

    /** A YAML double-quoted scalar (JSON string rules, which YAML accepts). */
    static String quote(String s) {
        StringBuilder q = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> q.append("\\\"");
                case '\\' -> q.append("\\\\");
                case '\n' -> q.append("\\n");
                case '\t' -> q.append("\\t");
                default -> {
                    if (c < 0x20) {
                        q.append(String.format("\\u%04x", (int) c));
                    } else {
                        q.append(c);
                    }
                }
            }
        }
        return q.append('"').toString();
    }
}
