package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.ForwardingBlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which members one superblock update behind the newest are taken as current at assembly. */
class EventMarginTest {
    private static final int CHUNK = 16 * 1024;

    private static List<MemoryBlockDevice> members(String prefix) {
        List<MemoryBlockDevice> m = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            m.add(new MemoryBlockDevice(prefix + i, 1024 * 512 + 64 * CHUNK, 512));
        }
        return m;
    }

    private static Raid5Array create(List<? extends BlockDevice> members) throws IOException {
        return Raid5Array.create(members, new Raid5Config("ev", CHUNK, Raid5Layout.LEFT_SYMMETRIC, 1024),
                Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.RESYNC), true);
    }

    private static Md1Superblock superblock(BlockDevice d) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
        d.read(Md1Superblock.OFFSET_BYTES, b);
        return Md1Superblock.decode(b.flip(), d.name());
    }

    /** A member that keeps its memory when the array is abandoned, as a crashed process leaves its files. */
    private static final class Kept extends ForwardingBlockDevice {
        Kept(BlockDevice below) {
            super(below);
        }

        @Override
        public void close() {
        }
    }

    @Test
    void aMemberThatMissedOnlyTheLastSuperblockUpdateIsCurrent() throws Exception {
        List<MemoryBlockDevice> m = members("a");
        ByteBuffer data = ByteBuffer.allocate(8 * CHUNK);
        new java.util.Random(1).nextBytes(data.array());
        try (Raid5Array a = create(m)) {
            a.write(0, data.duplicate());
        }
        for (int i = 1; i < 3; i++) {   // the last update (the clean close) reached member 0 only
            Md1Superblock sb = superblock(m.get(i));
            sb.events--;
            m.get(i).write(Md1Superblock.OFFSET_BYTES, sb.encode());
        }
        try (Raid5Array a = Raid5Assembler.assemble(m, List.of(), Raid5Options.defaults())) {
            assertEquals(Raid5Status.Health.CLEAN, a.status().health(), String.valueOf(a.assemblyProblems()));
            ByteBuffer back = ByteBuffer.allocate(data.capacity());
            a.read(0, back);
            assertEquals(data.rewind(), back.flip());
        }
    }

    @Test
    void aMemberAbsentWhileTheArrayWroteIsNotTakenBackAfterACrash() throws Exception {
        List<MemoryBlockDevice> m = members("b");
        ByteBuffer old = ByteBuffer.allocate(8 * CHUNK);
        try (Raid5Array a = create(m)) {
            a.write(0, old.duplicate());
        }
        // member 2 is away at the next start; the array runs degraded, writes, and the process dies
        List<BlockDevice> present = List.of(new Kept(m.get(0)), new Kept(m.get(1)));
        Raid5Array degraded = Raid5Assembler.assemble(present, List.of(), Raid5Options.defaults());
        ByteBuffer written = ByteBuffer.allocate(8 * CHUNK);
        new java.util.Random(2).nextBytes(written.array());
        degraded.write(0, written.duplicate());
        long events = superblock(m.get(0)).events;
        assertNotEquals(superblock(m.get(2)).events, events, "the degraded start recorded itself");
        // (abandoned: no close) member 2 comes back
        try (Raid5Array a = Raid5Assembler.assemble(m, List.of(), Raid5Options.defaults().withStartDirtyDegraded(true))) {
            ByteBuffer back = ByteBuffer.allocate(written.capacity());
            a.read(0, back);
            assertEquals(written.rewind(), back.flip(), "member 2 missed these writes: " + a.assemblyProblems()
                    + ", events " + superblock(m.get(0)).events + " / " + superblock(m.get(2)).events);
            assertTrue(a.status().health() != Raid5Status.Health.CLEAN || a.syncProgress().running(),
                    "member 2 is not simply current");
        }
    }
}
