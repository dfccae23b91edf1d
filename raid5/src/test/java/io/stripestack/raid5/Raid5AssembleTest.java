package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Assemble from superblocks: order from roles, and foreign, stale, faulty and missing members. */
class Raid5AssembleTest {
    static final long MEMBER = 3 << 20;
    static final Raid5Config CONFIG = Raid5Config.defaults("asm").withChunk(16384);

    @TempDir
    Path dir;

    private List<Path> paths(String prefix, int n) {
        return MemberFiles.paths(dir, prefix, n);
    }

    private byte[] createWithData(List<Path> paths, long seed) throws Exception {
        try (Raid5Array array = Raid5Files.create(paths, MEMBER, CONFIG, Raid5Options.defaults())) {
            byte[] data = new byte[(int) array.size()];
            new Random(seed).nextBytes(data);
            array.write(0, ByteBuffer.wrap(data));
            return data;
        }
    }

    private static byte[] readAll(Raid5Array array) throws Exception {
        byte[] got = new byte[(int) array.size()];
        array.read(0, ByteBuffer.wrap(got));
        return got;
    }

    private static boolean mentions(List<String> problems, Path path, String what) {
        return problems.stream().anyMatch(p -> p.contains(path.toString()) && p.contains(what));
    }

    @Test
    void memberOrderComesFromTheSuperblocksNotTheList() throws Exception {
        List<Path> paths = paths("m", 4);
        byte[] data = createWithData(paths, 1);
        List<Path> shuffled = List.of(paths.get(2), paths.get(0), paths.get(3), paths.get(1));
        try (Raid5Array array = Raid5Files.assemble(shuffled, Raid5Options.defaults(), false)) {
            assertArrayEquals(data, readAll(array));
            assertEquals(Raid5Status.Health.CLEAN, array.status().health());
            assertTrue(array.assemblyProblems().isEmpty(), array.assemblyProblems().toString());
            assertTrue(array.wasCleanAtOpen());
            List<Raid5Status.Member> members = array.status().members();
            for (int role = 0; role < 4; role++) {
                assertEquals(paths.get(role).toString(), members.get(role).device());
            }
        }
    }

    @Test
    void aMemberOfAnotherArrayIsReportedAndNotUsed() throws Exception {
        List<Path> a = paths("a", 3);
        List<Path> b = paths("b", 3);
        byte[] data = createWithData(a, 2);
        createWithData(b, 3);
        List<Path> mixed = List.of(a.get(0), a.get(1), b.get(2));
        Raid5AssembleException e = assertThrows(Raid5AssembleException.class,
                () -> Raid5Files.assemble(mixed, Raid5Options.defaults().withAllowDegraded(false), false));
        assertTrue(mentions(e.problems(), b.get(2), "belongs to another array"), e.getMessage());
        try (Raid5Array array = Raid5Files.assemble(mixed, Raid5Options.defaults(), false)) {
            assertEquals(Raid5Status.Health.DEGRADED, array.status().health());
            assertTrue(mentions(array.assemblyProblems(), b.get(2), "remove it from this array's member list"));
            assertArrayEquals(data, readAll(array));
        }
    }

    @Test
    void aStaleMemberIsReportedAndNotUsed() throws Exception {
        List<Path> paths = paths("s", 3);
        createWithData(paths, 4);
        Path backup = dir.resolve("s1.backup");
        Files.copy(paths.get(1), backup);
        byte[] newer;
        try (Raid5Array array = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            newer = readAll(array);
            byte[] part = new byte[40960];
            new Random(5).nextBytes(part);
            System.arraycopy(part, 0, newer, 4096, part.length);
            array.write(4096, ByteBuffer.wrap(part));
        }
        Files.copy(backup, paths.get(1), StandardCopyOption.REPLACE_EXISTING);
        try (Raid5Array array = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            assertTrue(mentions(array.assemblyProblems(), paths.get(1), "is stale"), array.assemblyProblems().toString());
            assertEquals(Raid5Status.MemberState.MISSING, array.status().members().get(1).state());
            assertArrayEquals(newer, readAll(array), "the stale member's old data must not be used");
        }
    }

    @Test
    void missingMembersDegradeOrStopTheArray() throws Exception {
        List<Path> paths = paths("x", 4);
        byte[] data = createWithData(paths, 6);
        Files.delete(paths.get(3));
        try (Raid5Array array = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            assertTrue(mentions(array.assemblyProblems(), paths.get(3), "not found"), array.assemblyProblems().toString());
            assertEquals(Raid5Status.Health.DEGRADED, array.status().health());
            assertArrayEquals(data, readAll(array));
        }
        Files.delete(paths.get(0));
        Raid5AssembleException e = assertThrows(Raid5AssembleException.class,
                () -> Raid5Files.assemble(paths, Raid5Options.defaults(), false));
        assertTrue(e.getMessage().contains("2 of 4 members unavailable"), e.getMessage());
        assertTrue(mentions(e.problems(), paths.get(0), "not found"), e.getMessage());
    }

    @Test
    void aFaultyMemberStaysFaultyAcrossARestart() throws Exception {
        List<Path> paths = paths("f", 3);
        byte[] data = createWithData(paths, 7);
        try (Raid5Array array = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            array.failMember(0);
            byte[] part = new byte[16384];
            new Random(8).nextBytes(part);
            System.arraycopy(part, 0, data, 0, part.length);
            array.write(0, ByteBuffer.wrap(part));
        }
        try (Raid5Array array = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            assertTrue(mentions(array.assemblyProblems(), paths.get(0), "marked faulty"), array.assemblyProblems().toString());
            assertEquals(Raid5Status.Health.DEGRADED, array.status().health());
            assertArrayEquals(data, readAll(array));
        }
    }

    @Test
    void aFileWithoutSuperblockIsNamed() throws Exception {
        List<Path> paths = paths("z", 3);
        createWithData(paths, 9);
        Path junk = dir.resolve("junk.img");
        Files.write(junk, new byte[(int) MEMBER]);
        Raid5AssembleException e = assertThrows(Raid5AssembleException.class,
                () -> Raid5Files.assemble(List.of(paths.get(0), junk, paths.get(2)),
                        Raid5Options.defaults().withAllowDegraded(false), false));
        assertTrue(mentions(e.problems(), junk, "no md superblock"), e.getMessage());
        assertThrows(java.io.IOException.class, () -> Raid5Files.create(paths, MEMBER, CONFIG, Raid5Options.defaults()));
    }

    /** Allocated members that their file system cannot hold are refused before any is written, leaving nothing. */
    @Test
    void allocatedMembersTooLargeForTheFileSystemAreRefusedUpFront() throws Exception {
        List<Path> paths = List.of(dir.resolve("big0.img"), dir.resolve("big1.img"), dir.resolve("big2.img"));
        long free = Files.getFileStore(dir).getUsableSpace();
        long member = (free / 2 + (1L << 30)) / 512 * 512;
        java.io.IOException e = assertThrows(java.io.IOException.class,
                () -> Raid5Files.create(paths, member, CONFIG, Raid5Options.defaults(), true));
        assertTrue(e.getMessage().contains("MiB free") && e.getMessage().contains("create_sparse"), e.getMessage());
        for (Path p : paths) {
            assertFalse(Files.exists(p), p + " was left behind");
        }
        try (Raid5Array array = Raid5Files.create(paths, MEMBER, CONFIG, Raid5Options.defaults(), true)) {
            assertEquals(MEMBER, Files.size(paths.get(0)));
        }
    }
}
