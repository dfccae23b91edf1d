package io.stripestack.targetserver.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The targets section written by saveconfig: what it keeps of the file, and that it loads to the same targets. */
class ConfigSaverTest {
    @TempDir
    Path dir;

    private String config(String targets) throws IOException {
        Files.createDirectories(dir.resolve("data"));
        Files.write(dir.resolve("data/k.key"), new byte[64]);
        Files.setPosixFilePermissions(dir.resolve("data/k.key"), java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        return """
                # head comment
                data_dir: %s   # where data lives
                %s
                # about the server
                server:
                  io_threads: 3 # three
                """.formatted(dir.resolve("data"), targets);
    }

    @Test
    void everyKindOfLunLoadsBackEqualAndTheRestOfTheFileIsKept() throws Exception {
        String text = config("""
                targets:
                  # this comment is inside the section and is not kept
                  - iqn: "iqn.2026-11.io.example:a"
                    alias: "with \\"quotes\\""
                    allowed_initiators: [iqn.2026-11.io.example:i1, iqn.2026-11.io.example:i2]
                    luns:
                      - {lun: 0, file: f0.img, create_size: 8MiB, serial: S0, read_only: true}
                      - {lun: 1, ram_size: 2MiB, readahead: 64}
                      - lun: 2
                        file: /elsewhere/f2.img
                        crypto: {cipher: aes-xts-plain64, key_file: k.key, offset: 8, skip: 2, sector_size: 4096,
                                 iv_large_sectors: true, allow_discards: true}
                        readahead: {read_ahead_kb: 32, placement: below-crypto}
                      - {lun: 3, file: f3.img, crypto: {luks: true, passphrase_file: /p/pass}}
                  - {iqn: "iqn.2026-11.io.example:b", luns: []}
                """);
        StripestackConfig before = ConfigLoader.parse("c.yaml", text, Path.of(""));
        String saved = ConfigSaver.withTargets(text, TargetsYaml.render(before.targets(), before.dataDir()));
        StripestackConfig after = ConfigLoader.parse("c.yaml", saved, Path.of(""));
        assertEquals(before.targets(), after.targets(), saved);
        assertEquals(before.server(), after.server());
        assertTrue(saved.startsWith("# head comment\ndata_dir: "), saved);
        assertTrue(saved.contains("   # where data lives\n"), saved);
        assertTrue(saved.contains("# about the server\nserver:\n  io_threads: 3 # three"), saved);
        assertFalse(saved.contains("inside the section"), saved);
        assertTrue(saved.contains("file: \"f0.img\""), "paths under data_dir stay relative: " + saved);
        assertTrue(saved.contains("file: \"/elsewhere/f2.img\""), saved);
    }

    @Test
    void aFileWithoutTargetsGetsTheSectionAppendedAndInlineSecretsAreNotWritten() throws Exception {
        String text = config("""
                targets:
                  - iqn: "iqn.2026-11.io.example:a"
                    chap: {user: u, secret: an-inline-secret}
                    luns: [{lun: 0, ram_size: 1MiB}]
                """);
        StripestackConfig loaded = ConfigLoader.parse("c.yaml", text, Path.of(""));
        String refusal = assertThrows(IllegalArgumentException.class,
                () -> TargetsYaml.render(loaded.targets(), loaded.dataDir())).getMessage();
        assertTrue(refusal.contains("target iqn.2026-11.io.example:a") && refusal.contains("secret_file"), refusal);
        assertFalse(refusal.contains("an-inline-secret"));

        String none = "data_dir: " + dir.resolve("data") + "\n# trailing words\n";
        String appended = ConfigSaver.withTargets(none, "targets: []\n");
        assertEquals(none + "targets: []\n", appended);
    }

    @Test
    void aStateThatWouldNotLoadIsNotWritten() throws Exception {
        Path file = dir.resolve("c.yaml");
        String text = config("targets:\n  - {iqn: \"iqn.2026-11.io.example:a\", luns: [{lun: 0, ram_size: 1MiB}]}\n");
        Files.writeString(file, text);
        IOException e = assertThrows(IOException.class,
                () -> ConfigSaver.save(file, text, new RunningState(ConfigLoader.parse("c", text, Path.of("")).server().portals(),
                        java.util.List.of(), java.util.List.of()), dir.resolve("data"), Path.of("")));
        assertTrue(e.getMessage().contains("would not load back") && e.getMessage().contains("at least one target"),
                e.getMessage());
        assertEquals(text, Files.readString(file), "the file is unchanged");
    }
    private static StripestackConfig.ArrayConfig fileArray(String name, Path... members) {
        return new StripestackConfig.ArrayConfig(name, java.util.List.of(members), java.util.List.of(), 512 * 1024,
                "left-symmetric", 0, false, 0, false, false, false, null, 0, new StripestackConfig.RemoteMembersConfig(
                        java.util.List.of(), java.util.List.of(), io.stripestack.remote.RemoteMemberOptions.defaults()));
    }

    @Test
    void anArrayEntryIsAddedOrDroppedWholeAndTheEntriesOfRunningArraysAreKeptWithTheirComments() throws Exception {
        Path data = dir.resolve("data");
        String text = """
                data_dir: x
                arrays:
                  # the arrays of this host
                  md0:
                    members: [a0, a1, a2]   # the three disks
                    chunk: 64KiB
                  # md5 is the old one
                  md5:
                    members: [b0, b1, b2]
                # the targets follow
                targets: []
                """;
        var md0 = fileArray("md0", data.resolve("a0"), data.resolve("a1"), data.resolve("a2"));
        var md7 = fileArray("md7", data.resolve("n/c0"), data.resolve("n/c1"), Path.of("/abs/c2"));
        var md5 = fileArray("md5", data.resolve("b0"), data.resolve("b1"), data.resolve("b2"));
        assertEquals(text, ConfigSaver.withArrays(text, java.util.List.of(md5, md0), data), "nothing changed, nothing written");
        assertEquals("""
                data_dir: x
                arrays:
                  # the arrays of this host
                  md0:
                    members: [a0, a1, a2]   # the three disks
                    chunk: 64KiB
                  # md5 is the old one
                  "md7":
                    members: ["n/c0", "n/c1", "/abs/c2"]
                # the targets follow
                targets: []
                """, ConfigSaver.withArrays(text, java.util.List.of(md0, md7), data));
        assertEquals("""
                data_dir: x
                arrays: {}
                # the targets follow
                targets: []
                """, ConfigSaver.withArrays(text, java.util.List.of(), data));
        String none = "data_dir: x\ntargets: []\n";
        assertEquals("data_dir: x\narrays:\n  \"md7\":\n    members: [\"n/c0\", \"n/c1\", \"/abs/c2\"]\ntargets: []\n",
                ConfigSaver.withArrays(none, java.util.List.of(md7), data), "a section of its own before the targets");
        String flow = "arrays: {md0: {members: [a0, a1, a2]}}\ntargets: []\n";
        assertEquals(flow, ConfigSaver.withArrays(flow, java.util.List.of(md0), data));
        assertEquals("arrays:\n  \"md0\":\n    members: [\"a0\", \"a1\", \"a2\"]\n  \"md7\":\n    members: [\"n/c0\", \"n/c1\","
                + " \"/abs/c2\"]\ntargets: []\n", ConfigSaver.withArrays(flow, java.util.List.of(md0, md7), data),
                "a flow-style section is written anew");
    }
    @Test
    void thePortalListIsRewrittenInPlaceOnlyWhenItChanged() throws Exception {
        var one = java.util.List.of(new StripestackConfig.Portal("127.0.0.1", 0));
        var two = java.util.List.of(new StripestackConfig.Portal("127.0.0.1", 0), new StripestackConfig.Portal("::1", 3261));
        String flow = "server:\n  io_threads: 2\n  portals: [\"127.0.0.1:0\"]   # tests\n  queue_depth: 8\ntargets: []\n";
        assertEquals(flow, ConfigSaver.withPortals(flow, one));
        assertEquals("server:\n  io_threads: 2\n  portals: [\"127.0.0.1:0\", \"[::1]:3261\"]   # tests\n  queue_depth: 8\n"
                + "targets: []\n", ConfigSaver.withPortals(flow, two));
        String block = "server:\n  portals:\n    - 127.0.0.1:0   # first\n    - \"[::1]:3261\"\n  # next\n  io_threads: 2\ntargets: []\n";
        assertEquals(block, ConfigSaver.withPortals(block, two));
        assertEquals("server:\n  portals:\n    [\"127.0.0.1:0\"]\n  # next\n  io_threads: 2\ntargets: []\n",
                ConfigSaver.withPortals(block, one));
        String without = "# c\nserver:\n  io_threads: 2\ntargets: []\n";
        assertEquals(without, ConfigSaver.withPortals(without,
                java.util.List.of(new StripestackConfig.Portal("127.0.0.1", ServerDefaults.PORT))), "the default");
        assertEquals("# c\nserver:\n  portals: [\"127.0.0.1:0\"]\n  io_threads: 2\ntargets: []\n",
                ConfigSaver.withPortals(without, one));
        assertEquals("server: {portals: [\"127.0.0.1:0\"], io_threads: 2}\ntargets: []\n",
                ConfigSaver.withPortals("server: {io_threads: 2}\ntargets: []\n", one));
        assertEquals("data_dir: x\nserver:\n  portals: [\"127.0.0.1:0\"]\ntargets: []\n",
                ConfigSaver.withPortals("data_dir: x\ntargets: []\n", one));
        for (String text : new String[] {ConfigSaver.withPortals(flow, two), ConfigSaver.withPortals(block, one),
                ConfigSaver.withPortals(without, one)}) {
            String loadable = text.replace("targets: []", "targets: [{iqn: \"iqn.2026-11.io.example:a\", luns: []}]");
            assertTrue(ConfigLoader.parse("t", loadable, dir).server().portals().size() >= 1, loadable);
        }
    }
    /** After a reshape: the array's member and spare lists and chunk are rewritten in place, the rest kept. */
    @Test
    void aReshapedArraysEntryListsItsFilesAndChunkWithTheRestKept() throws Exception {
        Path data = dir.resolve("data");
        String text = """
                data_dir: %s
                arrays:
                  # the grown one
                  md0:
                    members:      # block list
                      - m0.img
                      - m1.img
                      - m2.img
                    spares: [s0.img, s1.img]   # two spares
                    create_member_size: 8MiB
                    chunk: 64KiB
                  md1: {members: [a.img, b.img, c.img], chunk: 1MiB}
                targets:
                  - {iqn: "iqn.2026-11.io.example:a", luns: [{lun: 0, array: md0}]}
                """.formatted(data);
        StripestackConfig before = ConfigLoader.parse("c.yaml", text, Path.of(""));
        StripestackConfig.ArrayConfig md0 = before.arrays().get("md0");
        StripestackConfig.ArrayConfig grown = reshaped(md0, java.util.List.of(data.resolve("m0.img"),
                data.resolve("m1.img"), data.resolve("m2.img"), data.resolve("s0.img")),
                java.util.List.of(data.resolve("s1.img")), 128 << 10);
        String edited = ConfigSaver.withArrayShape(text, grown, data);
        StripestackConfig after = ConfigLoader.parse("c.yaml", edited, Path.of(""));
        assertEquals(grown.members(), after.arrays().get("md0").members(), edited);
        assertEquals(grown.spares(), after.arrays().get("md0").spares(), edited);
        assertEquals(128 << 10, after.arrays().get("md0").chunkBytes(), edited);
        assertEquals(before.arrays().get("md1"), after.arrays().get("md1"), edited);
        assertEquals(before.targets(), after.targets(), edited);
        assertTrue(edited.contains("  # the grown one\n") && edited.contains("members:      # block list\n")
                && edited.contains("   # two spares\n") && edited.contains("create_member_size: 8MiB"), edited);

        StripestackConfig.ArrayConfig md1 = before.arrays().get("md1");
        StripestackConfig.ArrayConfig md1Grown = reshaped(md1, java.util.List.of(data.resolve("a.img"),
                data.resolve("b.img"), data.resolve("c.img"), data.resolve("d.img")),
                java.util.List.of(data.resolve("e.img")), md1.chunkBytes());
        String flow = ConfigSaver.withArrayShape(edited, md1Grown, data);
        StripestackConfig flowAfter = ConfigLoader.parse("c.yaml", flow, Path.of(""));
        assertEquals(md1Grown.members(), flowAfter.arrays().get("md1").members(), flow);
        assertEquals(md1Grown.spares(), flowAfter.arrays().get("md1").spares(), flow);
        assertEquals(1 << 20, flowAfter.arrays().get("md1").chunkBytes(), flow);

        StripestackConfig.ArrayConfig unknown = fileArray("md9", data.resolve("x0"), data.resolve("x1"),
                data.resolve("x2"));
        assertEquals(null, ConfigSaver.withArrayShape(text, unknown, data), "no entry: nothing to edit");
    }

    /** {@code a} with other member and spare files and chunk, as after a reshape. */
    private static StripestackConfig.ArrayConfig reshaped(StripestackConfig.ArrayConfig a, java.util.List<Path> members,
                                                          java.util.List<Path> spares, int chunk) {
        return a.withMembers(members, spares, a.remote()).withChunkBytes(chunk);
    }

    @Test
    void anEntryAsTheArrayIsStaysByteForByteAndRemoteMembersAreWrittenAsTheirUrls() throws Exception {
        Path data = dir.resolve("data");
        String text = """
                data_dir: %s
                arrays:
                  md0:
                    members:
                      - m0.img   # the first
                      - iscsi://10.0.0.5/iqn.2026-11.io.example:d/1
                      - m2.img
                    remote_retry_timeout_seconds: 7
                targets:
                  - {iqn: "iqn.2026-11.io.example:a", luns: [{lun: 0, array: md0}]}
                """.formatted(data);
        StripestackConfig.ArrayConfig md0 = ConfigLoader.parse("c.yaml", text, Path.of("")).arrays().get("md0");
        assertEquals(text, ConfigSaver.withArrayShape(text, md0, data), "nothing differs: nothing is rewritten");

        StripestackConfig.RemoteMemberConfig replacement = StripestackConfig.RemoteMemberConfig.of(
                "iscsi://10.0.0.6/iqn.2026-11.io.example:d/2", null);
        StripestackConfig.ArrayConfig replaced = md0.withMembers(md0.members(), java.util.List.of(),
                md0.remote().with(java.util.List.of(replacement), java.util.List.of())).withStripeCacheSize(512);
        String edited = ConfigSaver.withArrayShape(text, replaced, data);
        StripestackConfig.ArrayConfig after = ConfigLoader.parse("c.yaml", edited, Path.of("")).arrays().get("md0");
        assertEquals(md0.members(), after.members(), edited);
        assertEquals("iscsi://10.0.0.6:3260/iqn.2026-11.io.example:d/2", after.remote().members().get(0).url().toString(),
                edited);
        assertEquals(1, after.remote().members().size(), edited);
        assertEquals(512, after.stripeCacheSize(), edited);
        assertEquals(java.time.Duration.ofSeconds(7), after.remote().options().retryTimeout(), "other keys kept: " + edited);
        assertFalse(edited.contains("10.0.0.5"), edited);
    }
}
