package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.stripestack.crypto.CryptSpec;
import io.stripestack.crypto.CryptoBlockDevice;
import io.stripestack.crypto.SectorCipher;
import io.stripestack.readahead.ReadaheadBlockDevice;
import io.stripestack.readahead.ReadaheadBudget;
import io.stripestack.testkit.GrowableBlockDevice;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A medium that grows at run time (an array reshaped onto more members) under the crypto and readahead layers:
 * the unit keeps serving, takes the new size, and every nexus hears CAPACITY DATA HAS CHANGED once.
 */
class ScsiCapacityGrowthTest {
    private static final int OLD_BYTES = 1 << 20;
    private static final int NEW_BYTES = 3 << 20;
    private static final long PAYLOAD_SECTORS = 16;

    private static byte[] readCapacity16() {
        return cdb(0x9E, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0);
    }

    private static long lastLba(byte[] capacity) {
        return Cdb.u64(capacity, 0);
    }

    @Test
    void theUnitTakesTheNewSizeThroughCryptoAndReadaheadAndTellsEveryNexus() throws Exception {
        GrowableBlockDevice base = new GrowableBlockDevice("grows", OLD_BYTES, NEW_BYTES);
        byte[] key = new byte[64];
        new Random(5).nextBytes(key);
        CryptoBlockDevice crypto = new CryptoBlockDevice("crypt-grows", base,
                SectorCipher.create(CryptSpec.parse("aes-xts-plain64"), key, 512, false), PAYLOAD_SECTORS, 0, false);
        ReadaheadBlockDevice top = new ReadaheadBlockDevice(crypto, new ReadaheadBudget(4 << 20));
        LogicalUnit unit = new LogicalUnit(top, LogicalUnitIdentity.of(LogicalUnitIdentity.stableIdFromName("g")), false);
        long oldBlocks = (OLD_BYTES - PAYLOAD_SECTORS * 512) / 512;
        long newBlocks = (NEW_BYTES - PAYLOAD_SECTORS * 512) / 512;
        try (ScsiHarness h = new ScsiHarness(unit)) {
            h.target.nexusAdded(NEXUS_B);
            h.run(NEXUS_A, cdb(0, 0, 0, 0, 0, 0), null).assertGood();
            h.run(NEXUS_B, cdb(0, 0, 0, 0, 0, 0), null).assertCheck(SenseException.UNIT_ATTENTION, 0x29, 0x00);
            h.run(NEXUS_B, cdb(0, 0, 0, 0, 0, 0), null).assertGood();
            assertEquals(oldBlocks - 1, lastLba(h.run(readCapacity16()).assertGood().data()));
            h.run(write10(oldBlocks - 1, 1, false), pattern(512, 1)).assertGood();
            h.run(write10(oldBlocks, 1, false), pattern(512, 2)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);

            base.grow(NEW_BYTES);
            assertEquals(oldBlocks - 1, lastLba(h.run(readCapacity16()).assertGood().data()),
                    "nothing changes until the unit is told");
            assertEquals(newBlocks, unit.capacityChanged());
            assertEquals(newBlocks * 512, top.size());
            assertEquals(newBlocks * 512, crypto.size());

            for (String nexus : new String[] {NEXUS_A, NEXUS_B}) {
                h.run(nexus, cdb(0, 0, 0, 0, 0, 0), null).assertCheck(SenseException.UNIT_ATTENTION, 0x2A, 0x09);
                h.run(nexus, cdb(0, 0, 0, 0, 0, 0), null).assertGood();
            }
            assertEquals(newBlocks - 1, lastLba(h.run(readCapacity16()).assertGood().data()));
            h.run(write10(newBlocks - 1, 1, false), pattern(512, 3)).assertGood();
            h.run(write10(oldBlocks, 1, false), pattern(512, 2)).assertGood();
            assertArrayEquals(pattern(512, 1), h.run(read10(oldBlocks - 1, 1)).assertGood().data(),
                    "the old last block keeps its sector number and IV");
            assertArrayEquals(pattern(512, 2), h.run(read10(oldBlocks, 1)).assertGood().data());
            assertArrayEquals(pattern(512, 3), h.run(read10(newBlocks - 1, 1)).assertGood().data());
            h.run(read10(newBlocks, 1)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);

            assertEquals(newBlocks, unit.capacityChanged(), "a second call with no growth");
            h.run(NEXUS_A, cdb(0, 0, 0, 0, 0, 0), null).assertGood();
        }
    }
}
