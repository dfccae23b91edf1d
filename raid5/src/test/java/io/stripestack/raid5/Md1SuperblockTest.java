package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

class Md1SuperblockTest {

    private static Md1Superblock sample(int disks) {
        Md1Superblock sb = new Md1Superblock();
        for (int i = 0; i < 16; i++) {
            sb.setUuid[i] = (byte) (0xA0 + i);
            sb.deviceUuid[i] = (byte) i;
        }
        sb.setName = "host:lun0";
        sb.ctime = Md1Superblock.mdTime(1_700_000_000_123L);
        sb.layout = 2;
        sb.chunkSectors = 1024;
        sb.raidDisks = disks;
        sb.sizeSectors = 1024 * 100;
        sb.dataOffsetSectors = 2048;
        sb.dataSizeSectors = 1024 * 100 + 7;
        sb.devNumber = 1;
        sb.events = 42;
        sb.devRoles = new int[disks];
        for (int i = 0; i < disks; i++) {
            sb.devRoles[i] = i;
        }
        sb.devRoles[disks - 1] = Md1Superblock.ROLE_FAULTY;
        return sb;
    }

    /** md's checksum, computed independently: 16-bit and 32-bit sums over an IntBuffer view. */
    private static int referenceChecksum(ByteBuffer block, int maxDev) {
        ByteBuffer b = block.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int bytes = 256 + 2 * maxDev;
        java.nio.IntBuffer words = b.duplicate().position(0).limit(bytes - bytes % 4).slice()
                .order(ByteOrder.LITTLE_ENDIAN).asIntBuffer();
        long sum = 0;
        while (words.hasRemaining()) {
            int index = words.position();
            int w = words.get();
            sum += index == 216 / 4 ? 0 : Integer.toUnsignedLong(w);
        }
        if (bytes % 4 == 2) {
            sum += Short.toUnsignedInt(b.getShort(bytes - 2));
        }
        return (int) ((sum & 0xffffffffL) + (sum >>> 32));
    }

    @Test
    void encodeDecodeRoundTripWithMdChecksum() {
        for (int disks : new int[] {3, 4, 5}) {                 // odd and even max_dev (trailing 16-bit word)
            Md1Superblock sb = sample(disks);
            ByteBuffer block = sb.encode();
            ByteBuffer le = block.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(0xa92b4efc, le.getInt(0));
            assertEquals(8, le.getLong(144), "super_offset");
            assertEquals(referenceChecksum(block, disks), le.getInt(216));
            Md1Superblock back = Md1Superblock.decode(block, "m1");
            assertArrayEquals(sb.setUuid, back.setUuid);
            assertEquals("host:lun0", back.setName);
            assertEquals(sb.ctime, back.ctime);
            assertEquals(1_700_000_000L, Md1Superblock.mdTimeSeconds(back.ctime));
            assertEquals(42, back.events);
            assertEquals(2048, back.dataOffsetSectors);
            assertArrayEquals(sb.devRoles, back.devRoles);
            assertTrue(back.isClean());
        }
    }

    /**
     * mdadm and the kernel store plain seconds in ctime/utime (high 24 bits 0); kernel 6.1 reads the field
     * unmasked, so anything in the high bits shows as a date in 2106.
     */
    @Test
    void timesAreWholeSecondsWithTheHigh24BitsZero() {
        Md1Superblock sb = sample(4);
        sb.ctime = Md1Superblock.mdTime(1_700_000_000_999L);
        sb.utime = Md1Superblock.mdTime(1_700_000_123_456L);
        ByteBuffer le = sb.encode().order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(1_700_000_000L, le.getLong(64), "ctime: seconds only");
        assertEquals(1_700_000_123L, le.getLong(192), "utime: seconds only");
        assertEquals(0, le.getLong(64) >>> 40, "ctime high 24 bits");
        assertEquals(0, le.getLong(192) >>> 40, "utime high 24 bits");

        // A member written by an older version carries microseconds in the high bits: the next write clears them.
        sb.ctime = 1_700_000_000L | (123_000L << 40);
        sb.utime = 1_700_000_123L | (456_000L << 40);
        Md1Superblock back = Md1Superblock.decode(sb.encode(), "old");
        assertEquals(1_700_000_000L, back.ctime);
        assertEquals(1_700_000_123L, back.utime);
    }

    @Test
    void decodeNamesTheMemberAndTheProblem() {
        ByteBuffer block = sample(3).encode();
        block.put(100, (byte) 1);                               // damage a byte covered by the checksum
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> Md1Superblock.decode(block, "/data/m2.img"));
        assertTrue(bad.getMessage().contains("/data/m2.img") && bad.getMessage().contains("checksum"), bad.getMessage());
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class,
                () -> Md1Superblock.decode(ByteBuffer.allocate(4096), "/data/x.img"));
        assertTrue(none.getMessage().contains("/data/x.img") && none.getMessage().contains("no md superblock"));
    }

    @Test
    void uuidFormatsLikeMdadm() {
        assertEquals("a0a1a2a3:a4a5a6a7:a8a9aaab:acadaeaf", Md1Superblock.formatUuid(sample(3).setUuid));
    }
    /** md_p.h's feature bits: a reshape moving the data offset is 0x44, the log is 0x800 or 0x400, never both. */
    @Test
    void featureBitsAreMdsAndEitherLogBitReadsAsTheLog() {
        assertEquals(0x40, Md1Superblock.FEATURE_NEW_OFFSET);
        assertEquals(0x20, Md1Superblock.FEATURE_RESHAPE_BACKWARDS);
        Md1Superblock sb = sample(4);
        sb.featureMap = Md1Superblock.FEATURE_MULTIPLE_PPLS;
        sb.pplOffset = 8;
        sb.pplSize = 2048;
        Md1Superblock back = Md1Superblock.decode(sb.encode(), "m");
        assertTrue(back.hasPpl(), "0x800 alone is a partial parity log");
        assertEquals(8, back.pplOffset);
        assertEquals(2048, back.pplSize);
        assertEquals(Md1Superblock.FEATURE_MULTIPLE_PPLS, PartialParityLog.featureBits(back));
        back.pplSize = 8 + 256;   // below two 132 KiB units: the kernel's single-unit bit
        assertEquals(Md1Superblock.FEATURE_PPL, PartialParityLog.featureBits(back));
        sb.featureMap = Md1Superblock.FEATURE_PPL;
        assertTrue(Md1Superblock.decode(sb.encode(), "m").hasPpl());
    }

    /** A member an earlier build left mid-reshape with 0x84 (md's RECOVERY_BITMAP for NEW_OFFSET) still resumes. */
    @Test
    void aLegacyReshapeBitIsReadAsTheNewOffset() {
        Md1Superblock sb = sample(4);
        sb.featureMap = Md1Superblock.FEATURE_RESHAPE_ACTIVE | Md1Superblock.FEATURE_NEW_OFFSET;
        sb.deltaDisks = 1;
        sb.newOffset = -1024;
        sb.newChunkSectors = sb.chunkSectors;
        ByteBuffer legacy = sb.encode().order(ByteOrder.LITTLE_ENDIAN);
        legacy.putInt(8, Md1Superblock.FEATURE_RESHAPE_ACTIVE | 0x80);
        legacy.putInt(216, Md1Superblock.checksum(legacy, sb.devRoles.length));
        Md1Superblock back = Md1Superblock.decode(legacy, "m");
        assertEquals(Md1Superblock.FEATURE_RESHAPE_ACTIVE | Md1Superblock.FEATURE_NEW_OFFSET, back.featureMap);
        assertEquals(-1024, back.newOffset);
        ByteBuffer rewritten = back.encode();
        assertEquals(0x44, rewritten.order(ByteOrder.LITTLE_ENDIAN).getInt(8), "written back as md's bits");
        sb.featureMap = Md1Superblock.FEATURE_RECOVERY_OFFSET | 0x80;   // md's real RECOVERY_BITMAP stays
        assertEquals(Md1Superblock.FEATURE_RECOVERY_OFFSET | 0x80, Md1Superblock.decode(sb.encode(), "m").featureMap);
    }
}
