package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.crypto.PlainModeKeys;
import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiUrl;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.control.AdminServer;
import io.stripestack.targetserver.testing.Dashboard;
import io.stripestack.targetserver.testing.Promtool;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * /metrics of a running server with what an operator watches: an array with the partial parity log, one with a
 * write-intent bitmap, an encrypted LUN, readahead, a session logged in. promtool accepts the scrape without a
 * remark; the families an operator alerts on are there with the values the server's state implies; a member
 * failing changes values, never the set of series (a state is a gauge per state, not a label that moves).
 */
class MetricsConventionTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:metrics";
    /** IoStats' standard counters; every other name in a snapshot is a layer's own counter. */
    private static final Set<String> STANDARD = Set.of("read_ops", "read_bytes", "read_ms", "write_ops", "write_bytes",
            "write_ms", "flush_ops", "discard_ops", "discard_bytes", "errors", "in_flight");

    @TempDir
    Path dir;

    private StripestackConfig config() throws Exception {
        Path key = dir.resolve("data/lun1.key");
        Files.createDirectories(key.getParent());
        byte[] keyBytes = new byte[64];
        new Random(3).nextBytes(keyBytes);
        PlainModeKeys.createKeyFile(key, keyBytes);
        Path file = dir.resolve("metrics.yaml");
        Files.writeString(file, """
                data_dir: %s
                server:
                  portals: ["127.0.0.1:0"]
                  metrics: "127.0.0.1:0"
                arrays:
                  md0:
                    members: [md0/m0.img, md0/m1.img, md0/m2.img, md0/m3.img]
                    create_member_size: 16MiB
                    chunk: 64KiB
                  md1:
                    members: [md1/m0.img, md1/m1.img, md1/m2.img]
                    create_member_size: 16MiB
                    chunk: 64KiB
                    consistency_policy: bitmap
                    bitmap_chunk: 1MiB
                targets:
                  - iqn: %s
                    luns:
                      - {lun: 0, array: md0}
                      - lun: 1
                        array: md1
                        crypto: {cipher: aes-xts-plain64, key_file: lun1.key}
                """.formatted(dir.resolve("data"), IQN));
        return ConfigLoader.load(file);
    }

    private static String scrape(StripestackServer server) throws Exception {
        try (var in = URI.create("http://127.0.0.1:" + server.metricsPort() + "/metrics").toURL().openStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** Every series of a scrape, as its name and labels. */
    private static Set<String> series(String scrape) {
        Set<String> out = new TreeSet<>();
        Matcher m = Pattern.compile("^([a-z_]+(?:\\{[^}]*\\})?) ", Pattern.MULTILINE).matcher(scrape);
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }

    private static void has(String scrape, String regex) {
        assertTrue(Pattern.compile("^" + regex + "$", Pattern.MULTILINE).matcher(scrape).find(),
                "no line matching " + regex + " in:\n" + scrape);
    }

    @Test
    void scrapePassesPromtoolAndCarriesWhatAnOperatorAlertsOn() throws Exception {
        StripestackConfig config = config();
        try (StripestackServer server = StripestackServer.start(config)) {
            String lun = "target=\"" + IQN + "\",lun=\"";
            try (IscsiInitiator session = IscsiInitiator.login(
                    IscsiUrl.parse("iscsi://127.0.0.1:" + server.boundAddresses().get(0).getPort() + "/" + IQN + "/1"),
                    InitiatorOptions.defaults())) {
                ByteBuffer block = ByteBuffer.allocateDirect(64 << 10);
                session.write16(0, block);
                block.clear();
                session.read16(0, block);
                for (LunStack stack : server.luns()) {
                    if (stack.config().lun() == 0) {
                        stack.top().write(0, ByteBuffer.allocate(4096));   // a partial row: md0 logs its parity
                    }
                }

                String before = scrape(server);
                Promtool.check(before);
                has(before, "stripestack_iscsi_sessions\\{target=\"" + Pattern.quote(IQN) + "\"\\} 1");
                has(before, "stripestack_array_state\\{array=\"md0\",state=\"clean\"\\} 1");
                has(before, "stripestack_array_state\\{array=\"md0\",state=\"degraded\"\\} 0");
                has(before, "stripestack_array_disks\\{array=\"md0\",state=\"active\"\\} 4");
                has(before, "stripestack_array_disks_required\\{array=\"md1\"\\} 3");
                has(before, "stripestack_array_degraded\\{array=\"md0\"\\} 0");
                has(before, "stripestack_array_consistency_policy\\{array=\"md0\",policy=\"ppl\"\\} 1");
                has(before, "stripestack_array_consistency_policy\\{array=\"md1\",policy=\"bitmap\"\\} 1");
                has(before, "stripestack_array_sync_action\\{array=\"md0\",action=\"idle\"\\} 1");
                has(before, "stripestack_array_sync_completed_bytes\\{array=\"md0\"\\} 0");
                has(before, "stripestack_array_sync_speed_bytes_per_second\\{array=\"md0\"\\} 0");
                has(before, "stripestack_array_mismatch_bytes\\{array=\"md0\"\\} 0");
                has(before, "stripestack_array_size_bytes\\{array=\"md0\"\\} [1-9][0-9]*");
                has(before, "stripestack_array_ppl_writes_total\\{array=\"md0\"\\} [1-9][0-9]*");
                has(before, "stripestack_array_bitmap_writes_total\\{array=\"md1\"\\} [1-9][0-9]*");
                String lun1 = Pattern.quote(lun) + "1\"";
                has(before, "stripestack_lun_written_bytes_total\\{" + lun1 + ",layer=\"readahead\"\\} 65536");
                has(before, "stripestack_lun_read_bytes_total\\{" + lun1 + ",layer=\"readahead\"\\} 65536");
                has(before, "stripestack_lun_write_time_seconds_total\\{" + lun1 + ",layer=\"crypt\"\\} [0-9.e+-]+");
                has(before, "stripestack_lun_io_now\\{" + Pattern.quote(lun) + "0\",layer=\"raid5\"\\} 0");
                has(before, "stripestack_crypt_encrypted_sectors_total\\{" + Pattern.quote(lun) + "1\"\\} [1-9][0-9]*");
                has(before, "stripestack_readahead_misses_total\\{" + Pattern.quote(lun) + "1\"\\} [0-9]+");
                has(before, "stripestack_write_buffer_in_use_bytes [0-9]+");
                has(before, "stripestack_data_in_held_bytes [0-9]+");
                assertFalse(before.contains("stripestack_device_counter"), before);
                Set<String> unknown = new TreeSet<>(Dashboard.families());
                unknown.removeIf(f -> f.startsWith("stripestack_remote_member_"));   // RemoteMembersServerTest's
                unknown.removeAll(Dashboard.declared(before));
                assertTrue(unknown.isEmpty(), Dashboard.FILE + " reads families /metrics lacks: " + unknown);

                AdminServer.request(config.server().adminSocket(), "set md0/fail 1");
                String after = scrape(server);
                Promtool.check(after);
                has(after, "stripestack_array_state\\{array=\"md0\",state=\"clean\"\\} 0");
                has(after, "stripestack_array_state\\{array=\"md0\",state=\"degraded\"\\} 1");
                has(after, "stripestack_array_disks\\{array=\"md0\",state=\"failed\"\\} 1");
                has(after, "stripestack_array_disks\\{array=\"md0\",state=\"active\"\\} 3");
                has(after, "stripestack_array_degraded\\{array=\"md0\"\\} 1");
                assertEquals(series(before), series(after), "a member's failure changes values, not series");
            }
        }
    }

    /** A counter a layer registers but /metrics leaves out is invisible to every dashboard: each is exported. */
    @Test
    void everyLayerCounterOfTheStacksIsExported() throws Exception {
        try (StripestackServer server = StripestackServer.start(config())) {
            Set<String> missing = new TreeSet<>();
            for (LunStack lun : server.luns()) {
                for (BlockDevice layer : lun.layers()) {
                    for (String name : layer.stats().snapshot().keySet()) {
                        if (!STANDARD.contains(name) && !MetricsReport.exposes(name)) {
                            missing.add(name);
                        }
                    }
                }
            }
            for (Raid5Array array : server.arrays().values()) {
                for (String name : array.stats().snapshot().keySet()) {
                    if (!STANDARD.contains(name) && !MetricsReport.exposes(name)) {
                        missing.add(name);
                    }
                }
            }
            assertTrue(missing.isEmpty(), "layer counters without a family: " + missing);
        }
    }
}
