package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.crypto.PlainModeKeys;
import io.stripestack.crypto.luks.Kdf;
import io.stripestack.crypto.luks.LuksFormatOptions;
import io.stripestack.crypto.luks.LuksFormatter;
import io.stripestack.crypto.luks.LuksHash;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Files;
import io.stripestack.raid5.Raid5Options;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.server.LunStack;
import io.stripestack.targetserver.server.StripestackServer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * dm-crypt's allow_discards for encrypted LUNs: off by default (no UNMAP, no provisioning VPD page, LBPME 0);
 * with {@code crypto.allow_discards: true}, or a LUKS2 header carrying the persistent "allow-discards" flag,
 * UNMAP reaches the array below at the payload offset and the LUN advertises it as a plain array LUN does
 * (LBPRZ 0: discarded blocks decrypt to garbage, not zeros).
 */
class EncryptedDiscardTest {
    private static final long PAYLOAD_SECTORS = 256;     // one full stripe of 3 x 64 KiB members: aligned

    @TempDir
    Path dir;

    private Path keyFile(String name) throws Exception {
        Path key = dir.resolve(name);
        byte[] bytes = new byte[64];
        new java.util.Random(name.hashCode()).nextBytes(bytes);
        PlainModeKeys.createKeyFile(key, bytes);
        return key;
    }

    private static byte[] unmap(long lba, int blocks) {
        byte[] p = new byte[24];
        Cdb.put16(p, 0, p.length - 2);
        Cdb.put16(p, 2, 16);
        Cdb.put64(p, 8, lba);
        Cdb.put32(p, 16, blocks);
        return p;
    }

    private static byte[] unmapCdb() {
        return cdb(0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0);
    }

    private static byte[] readCapacity16(ScsiHarness h) {
        return h.run(cdb(0x9e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0)).assertGood().data();
    }

    private static boolean lists(byte[] supportedPages, int page) {
        for (int i = 4; i < supportedPages.length; i++) {
            if ((supportedPages[i] & 0xff) == page) {
                return true;
            }
        }
        return false;
    }

    /** LUKS2 formatted on md2, then config.flags gets "allow-discards" as cryptsetup --persistent writes it. */
    private void formatLuks2WithAllowDiscards(List<Path> members, Path pass) throws Exception {
        try (Raid5Array md2 = Raid5Files.create(members, 24 << 20, Raid5Config.defaults("md2").withChunk(65536),
                Raid5Options.defaults())) {
            LuksFormatter.format(md2, LuksFormatOptions.luks2().withKdf(new Kdf.Pbkdf2(LuksHash.SHA256, 1000))
                    .withDigestIterations(1000).withAlignPayload(PAYLOAD_SECTORS), Files.readAllBytes(pass));
            ByteBuffer binary = ByteBuffer.allocate(512);
            md2.read(0, binary);
            int hdrSize = Math.toIntExact(binary.getLong(8));
            for (long at : new long[] {0, hdrSize}) {
                ByteBuffer b = ByteBuffer.allocate(hdrSize);
                md2.read(at, b);
                byte[] copy = b.array();
                int end = 4096;
                while (copy[end] != 0) {
                    end++;
                }
                String json = new String(copy, 4096, end - 4096, StandardCharsets.UTF_8);
                String edited = json.replaceFirst("(\"keyslots_size\":\"\\d+\")", "$1,\"flags\":[\"allow-discards\"]");
                assertFalse(edited.equals(json), json);
                Arrays.fill(copy, 4096, hdrSize, (byte) 0);
                byte[] text = edited.getBytes(StandardCharsets.UTF_8);
                System.arraycopy(text, 0, copy, 4096, text.length);
                Arrays.fill(copy, 448, 512, (byte) 0);
                System.arraycopy(MessageDigest.getInstance("SHA-256").digest(copy), 0, copy, 448, 32);
                md2.write(at, ByteBuffer.wrap(copy));
            }
        }
    }

    @Test
    void discardsPassOnlyWhenAllowedAndAreAdvertisedLikeAPlainLun() throws Exception {
        Path k0 = keyFile("k0.key");
        Path k1 = keyFile("k1.key");
        Path pass = keyFile("luks.key");
        formatLuks2WithAllowDiscards(List.of(dir.resolve("c0.img"), dir.resolve("c1.img"), dir.resolve("c2.img")), pass);
        StripestackConfig config = ConfigLoader.parse("discard.yaml", """
                data_dir: %s
                server: {portals: ["127.0.0.1:0"]}
                arrays:
                  md0: {members: [a0.img, a1.img, a2.img], create_member_size: 8MiB, chunk: 64KiB}
                  md1: {members: [b0.img, b1.img, b2.img], create_member_size: 8MiB, chunk: 64KiB}
                  md2: {members: [c0.img, c1.img, c2.img]}
                  md3: {members: [d0.img, d1.img, d2.img], create_member_size: 8MiB, chunk: 64KiB}
                targets:
                  - iqn: iqn.2026-11.io.stripestack:discard
                    luns:
                      - {lun: 0, array: md0, readahead: 0, crypto: {key_file: %s, cipher: aes-xts-plain64, offset: %d, allow_discards: true}}
                      - {lun: 1, array: md1, readahead: 0, crypto: {key_file: %s, cipher: aes-xts-plain64, offset: %d}}
                      - {lun: 2, array: md2, crypto: {luks: true, key_file: %s}}
                      - {lun: 3, array: md3}
                """.formatted(dir, k0, PAYLOAD_SECTORS, k1, PAYLOAD_SECTORS, pass), dir);
        assertTrue(config.targets().get(0).luns().get(0).crypto().allowDiscards());
        assertFalse(config.targets().get(0).luns().get(1).crypto().allowDiscards(), "off by default");
        assertFalse(config.targets().get(0).luns().get(2).crypto().allowDiscards(), "LUN 2: from the header only");
        try (StripestackServer server = StripestackServer.start(config)) {
            List<LunStack> luns = server.luns();
            BlockDevice allowed = luns.get(0).top();
            BlockDevice closed = luns.get(1).top();
            try (ScsiHarness a = new ScsiHarness(allowed, false); ScsiHarness c = new ScsiHarness(closed, false);
                 ScsiHarness l = new ScsiHarness(luns.get(2).top(), false);
                 ScsiHarness plain = new ScsiHarness(luns.get(3).top(), false)) {
                // Advertised: the provisioning VPD page, UNMAP limits in Block Limits, LBPME, as the plain LUN has.
                byte[] plainLimits = plain.run(inquiry(true, 0xB0, 64)).assertGood().data();
                for (ScsiHarness h : List.of(a, l)) {
                    assertTrue(lists(h.run(inquiry(true, 0x00, 64)).assertGood().data(), 0xB2));
                    byte[] limits = h.run(inquiry(true, 0xB0, 64)).assertGood().data();
                    assertArrayEquals(Arrays.copyOfRange(plainLimits, 20, 36), Arrays.copyOfRange(limits, 20, 36),
                            "MAXIMUM UNMAP LBA COUNT, descriptors, granularity and alignment as the plain LUN's");
                    byte[] lbp = h.run(inquiry(true, 0xB2, 64)).assertGood().data();
                    assertEquals(0x80, lbp[5] & 0x80, "LBPU");
                    assertEquals(0x80, readCapacity16(h)[14] & 0xc0, "LBPME set, LBPRZ clear");
                }
                assertTrue(lists(plain.run(inquiry(true, 0x00, 64)).assertGood().data(), 0xB2));
                assertEquals(0xc0, readCapacity16(plain)[14] & 0xc0, "the plain array LUN: LBPME and LBPRZ");
                // Not allowed: nothing advertised, UNMAP refused.
                assertFalse(lists(c.run(inquiry(true, 0x00, 64)).assertGood().data(), 0xB2));
                assertEquals(0, readCapacity16(c)[14] & 0xc0);
                assertArrayEquals(new byte[4], Arrays.copyOfRange(c.run(inquiry(true, 0xB0, 64)).assertGood().data(), 20, 24));

                byte[] data = pattern(256 << 10, 7);
                long lba = 1024;
                for (ScsiHarness h : List.of(a, c)) {
                    h.run(write10(lba, 512, false), data).assertGood();
                    h.run(write10(lba + 512, 8, false), pattern(4096, 8)).assertGood();
                }
                Raid5Array md0 = server.arrays().get("md0");
                Raid5Array md1 = server.arrays().get("md1");
                long below = PAYLOAD_SECTORS * 512 + lba * 512;
                ByteBuffer cipher = ByteBuffer.allocate(data.length);
                md0.read(below, cipher);
                assertFalse(Arrays.equals(new byte[data.length], cipher.array()), "ciphertext below before UNMAP");

                a.run(unmapCdb(), unmap(lba, 512)).assertGood();
                ByteBuffer after = ByteBuffer.allocate(data.length);
                md0.read(below, after);
                assertArrayEquals(new byte[data.length], after.array(),
                        "the discard reached md0 at the payload offset (md0 zero-fills discarded ranges)");
                ByteBuffer next = ByteBuffer.allocate(4096);
                md0.read(below + data.length, next);
                assertFalse(Arrays.equals(new byte[4096], next.array()), "nothing discarded beyond the range");
                assertFalse(Arrays.equals(data, Arrays.copyOf(a.run(read10(lba, 512)).data(), data.length)),
                        "discarded blocks no longer read back as the data");

                c.run(unmapCdb(), unmap(lba, 512)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x20, 0x00);
                assertArrayEquals(data, c.run(read10(lba, 512)).assertGood().data(), "nothing discarded on LUN 1");
                ByteBuffer still = ByteBuffer.allocate(data.length);
                md1.read(below, still);
                assertFalse(Arrays.equals(new byte[data.length], still.array()));
            }
        }
    }
}
