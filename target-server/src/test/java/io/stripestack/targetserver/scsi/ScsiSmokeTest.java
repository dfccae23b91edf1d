package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.MemoryBlockDevice;
import org.junit.jupiter.api.Test;

class ScsiSmokeTest {

    @Test
    void newNexusSeesPowerOnUnitAttentionThenReadsWhatItWrote() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", 1 << 20, 512), false)) {
            h.target.nexusAdded(NEXUS_A);
            h.run(cdb(0, 0, 0, 0, 0, 0)).assertCheck(SenseException.UNIT_ATTENTION, 0x29, 0x00);
            h.run(cdb(0, 0, 0, 0, 0, 0)).assertGood();

            byte[] data = pattern(4096, 1);
            h.run(write10(100, 8, false), data).assertGood();
            ScsiHarness.Result read = h.run(read10(100, 8)).assertGood();
            assertArrayEquals(data, read.data());
            assertEquals(4096, read.commandTransferLength());
        }
    }
}
