package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Arrays made by the real Linux md driver and mdadm (src/test/resources/kernel-fixtures: MANIFEST says which
 * kernel, which mdadm, the commands, each member's sha256 and the content) open here as Linux opens them: the
 * partial parity log read from either of md's feature bits and kept, the kernel's log replayed after its power cut
 * (and a degraded start of that array allowed, as the kernel allows it, with the same data), the bitmap array
 * with its bitmap, the interrupted reshape resumed and finished, and every block the pattern the manifest names.
 */
class KernelFixturesTest {
    static final int BLOCK = 4096;

    record Fixture(String name, int members, ConsistencyPolicy policy, String state, int blocks, List<String> generations) {
    }

    static Path fixtures;
    static final Map<String, Fixture> ARRAYS = new HashMap<>();
    static final Map<String, String[]> FILES = new HashMap<>();

    @TempDir
    Path dir;

    @BeforeAll
    static void readManifest() throws IOException, URISyntaxException {
        fixtures = Path.of(KernelFixturesTest.class.getResource("/kernel-fixtures/MANIFEST").toURI()).getParent();
        for (String line : Files.readAllLines(fixtures.resolve("MANIFEST"))) {
            String[] f = line.split(" ");
            if (f[0].equals("array")) {
                ARRAYS.put(f[1], new Fixture(f[1], Integer.parseInt(f[2]), ConsistencyPolicy.fromMdName(f[3]), f[4],
                        Integer.parseInt(f[5]), List.of(f[6].split(","))));
            } else if (f[0].equals("file")) {
                FILES.put(f[1], new String[] {f[2], f[3]});
            }
        }
        assertEquals(4, ARRAYS.size(), "the manifest names the four arrays");
    }

    /** The members of {@code name} unpacked into {@code dir}, each checked against the manifest's sha256. */
    List<Path> unpack(String name, Path into) throws IOException {
        Files.createDirectories(into);
        List<Path> paths = new ArrayList<>();
        for (int i = 0; i < ARRAYS.get(name).members(); i++) {
            String file = name + "-" + i + ".img";
            String[] sums = FILES.get(file);
            assertNotNull(sums, file + " in the manifest");
            Path gz = fixtures.resolve(file + ".gz");
            assertEquals(sums[1], sha256(Files.readAllBytes(gz)), gz + " as stored");
            byte[] image;
            try (InputStream in = new GZIPInputStream(Files.newInputStream(gz))) {
                image = in.readAllBytes();
            }
            assertEquals(sums[0], sha256(image), file + " unpacked");
            Path p = into.resolve(file);
            Files.write(p, image);
            paths.add(p);
        }
        return paths;
    }

    static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /** The manifest's block: "GG:BBBBBBBBBBBB\n" 256 times. */
    static byte[] patternBlock(String generation, long block) {
        byte[] one = String.format("%s:%012d%n", generation, block).getBytes(StandardCharsets.US_ASCII);
        byte[] b = new byte[BLOCK];
        for (int i = 0; i < BLOCK; i += one.length) {
            System.arraycopy(one, 0, b, i, one.length);
        }
        return b;
    }

    /** Reads the manifest's blocks of {@code f} and checks each is the pattern of one of its generations. */
    static byte[] readPattern(Raid5Array a, Fixture f) throws IOException {
        assertTrue(a.size() >= (long) f.blocks() * BLOCK, "array size " + a.size());
        byte[] all = new byte[f.blocks() * BLOCK];
        ByteBuffer buf = ByteBuffer.wrap(all);
        for (int at = 0; at < all.length; at += 1 << 20) {
            a.read(at, buf.clear().position(at).limit(Math.min(all.length, at + (1 << 20))).slice());
        }
        for (int b = 0; b < f.blocks(); b++) {
            byte[] got = java.util.Arrays.copyOfRange(all, b * BLOCK, (b + 1) * BLOCK);
            boolean matches = false;
            for (String g : f.generations()) {
                matches |= java.util.Arrays.equals(got, patternBlock(g, b));
            }
            assertTrue(matches, f.name() + ": block " + b + " reads '"
                    + new String(got, 0, 16, StandardCharsets.US_ASCII).trim() + "...', not a generation of its pattern");
        }
        return all;
    }

    static Md1Superblock superblock(Path member) throws IOException {
        ByteBuffer block = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
        try (var ch = java.nio.channels.FileChannel.open(member)) {
            ch.read(block, Md1Superblock.OFFSET_BYTES);
        }
        return Md1Superblock.decode(block.flip(), member.toString());
    }

    static long checkMismatches(Raid5Array a) throws InterruptedException {
        a.setSyncAction("check");
        assertTrue(a.awaitSyncIdle(2, TimeUnit.MINUTES), "check finished");
        return a.mismatchCount();
    }

    @Test
    void pplArrayKeepsItsLogUnderMdsBitAndServesThePattern() throws Exception {
        Fixture f = ARRAYS.get("ppl-clean");
        List<Path> paths = unpack(f.name(), dir);
        Md1Superblock kernel = superblock(paths.get(0));
        assertEquals(Md1Superblock.FEATURE_MULTIPLE_PPLS, kernel.featureMap, "mdadm 4.2 writes 0x800 alone");
        assertEquals(ConsistencyPolicy.PPL, ConsistencyPolicy.of(kernel));
        try (Raid5Array a = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            assertEquals(f.policy(), a.consistencyPolicy());
            assertEquals(Raid5Status.Health.CLEAN, a.status().health());
            readPattern(a, f);
            a.write(0, ByteBuffer.wrap(patternBlock("00", 0)));   // a logged write, the same content
            assertEquals(0, checkMismatches(a));
        }
        for (Path p : paths) {
            Md1Superblock after = superblock(p);
            assertEquals(Md1Superblock.FEATURE_MULTIPLE_PPLS, after.featureMap, p + ": still md's ppl bit, no bitmap");
            assertEquals(kernel.pplOffset, after.pplOffset);
            assertEquals(kernel.pplSize, after.pplSize);
            assertTrue(after.isClean());
        }
        for (int missing = 0; missing < paths.size(); missing++) {
            List<Path> some = unpack(f.name(), dir.resolve("without" + missing));
            some.remove(missing);
            try (Raid5Array a = Raid5Files.assemble(some, Raid5Options.defaults(), false)) {
                assertEquals(Raid5Status.Health.DEGRADED, a.status().health());
                readPattern(a, f);
            }
        }
    }

    @Test
    void bitmapArrayKeepsItsBitmap() throws Exception {
        Fixture f = ARRAYS.get("bitmap");
        List<Path> paths = unpack(f.name(), dir);
        try (Raid5Array a = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            assertEquals(f.policy(), a.consistencyPolicy());
            readPattern(a, f);
            assertEquals(0, checkMismatches(a));
        }
        assertTrue(superblock(paths.get(0)).hasBitmap());
        assertFalse(superblock(paths.get(0)).hasPpl());
    }

    @Test
    void interruptedKernelReshapeResumesAndFinishes() throws Exception {
        Fixture f = ARRAYS.get("reshape");
        List<Path> paths = unpack(f.name(), dir);
        Md1Superblock kernel = superblock(paths.get(0));
        assertTrue(kernel.isReshaping(), "the fixture is mid-reshape");
        assertEquals(Md1Superblock.FEATURE_RESHAPE_ACTIVE | Md1Superblock.FEATURE_NEW_OFFSET, kernel.featureMap,
                "md writes 0x44 while the data offset moves");
        assertTrue(kernel.newOffset < 0 && kernel.reshapePosition > 0, "new_offset " + kernel.newOffset);
        try (Raid5Array a = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            assertTrue(a.awaitReshape(2, TimeUnit.MINUTES), "the reshape finished");
            assertEquals(f.members(), a.memberCount());
            readPattern(a, f);
            assertEquals(0, checkMismatches(a));
        }
        Md1Superblock grown = superblock(paths.get(0));
        assertFalse(grown.isReshaping());
        assertEquals(kernel.dataOffsetSectors + kernel.newOffset, grown.dataOffsetSectors);
        assertEquals(f.members(), grown.raidDisks);
    }

    @Test
    void kernelLogIsReplayedAfterItsPowerCutAndADegradedStartServesTheSameData() throws Exception {
        Fixture f = ARRAYS.get("ppl-powercut");
        List<Path> paths = unpack(f.name(), dir.resolve("full"));
        Md1Superblock kernel = superblock(paths.get(0));
        assertFalse(kernel.isClean(), "the power was cut while the array was written");
        byte[] full;
        try (Raid5Array a = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            String recovery = a.startRecovery();
            assertTrue(recovery.contains("entries replayed") && !recovery.contains("invalid")
                    && !recovery.contains(" 0 entries replayed"), recovery);
            assertEquals(f.policy(), a.consistencyPolicy());
            assertEquals("idle", a.syncAction(), "the log replaced the resync");
            full = readPattern(a, f);
            assertEquals(0, checkMismatches(a), "parity agrees with the data after the replay");
        }
        for (int missing = 0; missing < f.members(); missing++) {
            List<Path> some = unpack(f.name(), dir.resolve("without" + missing));
            some.remove(missing);
            try (Raid5Array a = Raid5Files.assemble(some, Raid5Options.defaults(), false)) {
                assertEquals(Raid5Status.Health.DEGRADED, a.status().health());
                assertTrue(a.startRecovery().contains("entries replayed"), a.startRecovery());
                assertArrayEquals(full, readPattern(a, f), "member " + missing + " missing");
            }
        }
    }
}
