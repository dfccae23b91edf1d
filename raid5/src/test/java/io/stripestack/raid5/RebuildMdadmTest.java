package io.stripestack.raid5;

import static io.stripestack.raid5.MdadmExamineTest.examine;
import static io.stripestack.raid5.MdadmExamineTest.field;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Rebuild onto file spares, interrupted by a restart, judged by the real {@code mdadm --examine}. */
class RebuildMdadmTest {
    static final Raid5Config CONFIG = Raid5Config.defaults("rebuild").withChunk(16384);
    static final long MEMBER = 4L << 20;

    @TempDir
    Path dir;

    private static byte[] readAll(Raid5Array array) throws Exception {
        byte[] got = new byte[(int) array.size()];
        array.read(0, ByteBuffer.wrap(got));
        return got;
    }

    @Test
    void aSpareIsRecordedAsSpareAndKeptByAssemble() throws Exception {
        List<Path> paths = List.of(dir.resolve("a0"), dir.resolve("a1"), dir.resolve("a2"));
        Path spare = dir.resolve("s");
        try (Raid5Array array = Raid5Files.create(paths, MEMBER, CONFIG, Raid5Options.defaults())) {
            Raid5Files.addSpare(array, spare, 0);
        }
        String out = examine(spare);
        assertEquals("spare", field(out, "Device Role"));
        assertTrue(field(out, "Checksum").endsWith("- correct"), out);
        assertEquals("AAA ('A' == active, '.' == missing, 'R' == replacing)", field(examine(paths.get(0)), "Array State"));
        try (Raid5Array array = Raid5Files.assemble(List.of(paths.get(0), spare, paths.get(1), paths.get(2)),
                Raid5Options.defaults(), false)) {
            assertEquals(List.of(spare.toString()), array.status().spares());
            assertEquals(List.of(), array.assemblyProblems());
        }
    }

    @Test
    void aRebuildInterruptedByARestartResumesFromItsRecoveryOffset() throws Exception {
        List<Path> paths = List.of(dir.resolve("m0"), dir.resolve("m1"), dir.resolve("m2"));
        Path spare = dir.resolve("spare");
        byte[] model;
        long offsetAtStop;
        try (Raid5Array array = Raid5Files.create(paths, MEMBER, CONFIG, Raid5Options.defaults())) {
            model = new byte[(int) array.size()];
            new Random(1).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            array.failMember(1);
            array.setSyncSpeedMin(1);
            array.setSyncSpeedMax(300);          // 3 MiB per member at 300 KiB/s: ~10 s, stopped after a few rows
            Raid5Files.addSpare(array, spare, 0);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (array.syncProgress().doneSectors() < 3 * 32 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals("recover", array.syncAction());
            offsetAtStop = array.syncProgress().doneSectors();
            assertTrue(offsetAtStop > 0 && offsetAtStop < array.syncProgress().totalSectors());
        }
        String during = examine(spare);
        long recorded = Long.parseLong(field(during, "Recovery Offset").replace(" sectors", ""));
        assertTrue(recorded >= offsetAtStop && recorded % 32 == 0, "recovery offset " + recorded + " vs " + offsetAtStop);
        assertEquals("Active device 1", field(during, "Device Role"));
        assertEquals("clean", field(during, "State"));

        try (Raid5Array array = Raid5Files.assemble(List.of(paths.get(0), paths.get(2), spare, paths.get(1)),
                Raid5Options.defaults(), false)) {
            assertEquals(Raid5Status.MemberState.REBUILDING, array.status().members().get(1).state());
            assertEquals(spare.toString(), array.status().members().get(1).device());
            assertTrue(array.assemblyProblems().stream().anyMatch(p -> p.contains("resumes at member sector " + recorded)),
                    array.assemblyProblems().toString());
            assertArrayEquals(model, readAll(array), "reads during the resumed rebuild");
            assertTrue(array.awaitSyncIdle(30, TimeUnit.SECONDS));
            assertEquals(Raid5Status.Health.CLEAN, array.status().health(), array.status().mdstat());
        }
        for (int i = 0; i < 3; i++) {
            Path p = i == 1 ? spare : paths.get(i);
            String out = examine(p);
            assertEquals("clean", field(out, "State"), out);
            assertEquals("Active device " + i, field(out, "Device Role"), out);
            assertEquals("AAA ('A' == active, '.' == missing, 'R' == replacing)", field(out, "Array State"), out);
            assertTrue(field(out, "Checksum").endsWith("- correct"), out);
            assertFalse(out.contains("Recovery Offset"), out);
        }
        try (Raid5Array array = Raid5Files.assemble(List.of(paths.get(0), spare, paths.get(2)),
                Raid5Options.defaults(), false)) {
            assertArrayEquals(model, readAll(array));
            assertEquals(Raid5Status.Health.CLEAN, array.status().health());
            array.setSyncAction("check");
            assertTrue(array.awaitSyncIdle(30, TimeUnit.SECONDS));
            assertEquals(0, array.mismatchCount());
        }
    }
}
