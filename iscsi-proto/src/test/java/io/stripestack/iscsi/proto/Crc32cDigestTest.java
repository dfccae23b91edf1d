package io.stripestack.iscsi.proto;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class Crc32cDigestTest {
    private static int digest(byte[] bytes, int zeroPadding) {
        Crc32cDigest d = new Crc32cDigest();
        d.start();
        d.add(ByteBuffer.wrap(bytes));
        d.addZeroPadding(zeroPadding);
        return d.value();
    }

    @Test
    void matchesTheVectorsOfRfc7143AppendixB() {
        byte[] zeros = new byte[32];
        byte[] ones = new byte[32];
        Arrays.fill(ones, (byte) 0xff);
        byte[] ascending = new byte[32];
        for (int i = 0; i < 32; i++) {
            ascending[i] = (byte) i;
        }
        assertEquals(0x8a9136aa, digest(zeros, 0));
        assertEquals(0x62a8ab43, digest(ones, 0));
        assertEquals(0x46dd794e, digest(ascending, 0));
    }

    @Test
    void paddingCountsAsZeroBytesAndGoesLeastSignificantByteFirst() {
        assertEquals(digest(new byte[] {1, 2, 3, 0}, 0), digest(new byte[] {1, 2, 3}, 1));
        Crc32cDigest d = new Crc32cDigest();
        d.start();
        d.add(ByteBuffer.wrap(new byte[32]));
        ByteBuffer wire = d.computed();
        assertEquals(4, wire.remaining());
        assertEquals((byte) 0xaa, wire.get(0));
        assertEquals((byte) 0x8a, wire.get(3));
    }

    @Test
    void aReceivedDigestIsComparedWithTheComputedOne() {
        Crc32cDigest d = new Crc32cDigest();
        d.start();
        ByteBuffer data = ByteBuffer.wrap(new byte[32]);
        d.add(data);
        assertEquals(0, data.position(), "adding leaves the position as it was");
        d.receiveBuffer().put(new byte[] {(byte) 0x8a, (byte) 0x91, 0x36, (byte) 0xaa});
        assertFalse(d.receivedMatches(), "big-endian on the wire is wrong");
        d.receiveBuffer().put(new byte[] {(byte) 0xaa, 0x36, (byte) 0x91, (byte) 0x8a});
        assertTrue(d.receivedMatches());
    }
}
