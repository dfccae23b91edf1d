package io.stripestack.targetserver.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An md RAID-5 array read from its member files the way Linux would, with nothing of the engine under test: the
 * geometry comes from what the real {@code mdadm --examine} prints for each member (role, raid devices, chunk,
 * data offset, array size, layout), and the placement from md's left-symmetric layout (parity of row r on
 * member n - 1 - r mod n, the row's data chunks on the members after it). Tests use it to check that an array
 * the engine reshaped is one Linux md would assemble with the same contents and consistent parity.
 */
public final class MdReference implements AutoCloseable {
    private final FileChannel[] byRole;
    private final int chunk;
    private final long dataOffset;
    private final long arrayBytes;

    private MdReference(FileChannel[] byRole, int chunk, long dataOffset, long arrayBytes) {
        this.byRole = byRole;
        this.chunk = chunk;
        this.dataOffset = dataOffset;
        this.arrayBytes = arrayBytes;
    }

    /**
     * Examines every member with mdadm and opens them by role; fails unless they agree on one clean,
     * left-symmetric geometry with every role present exactly once.
     */
    public static MdReference open(List<Path> members) throws IOException, InterruptedException {
        FileChannel[] byRole = null;
        int chunk = 0;
        long dataOffset = -1;
        long arrayBytes = -1;
        for (Path member : members) {
            String out = ExternalTools.run("mdadm", "--examine", member.toString())
                    .requireSuccess("mdadm --examine " + member).output();
            int devices = Integer.parseInt(field(out, "Raid Devices"));
            String chunkText = field(out, "Chunk Size");
            assertTrue(chunkText.endsWith("K"), chunkText);
            int memberChunk = Integer.parseInt(chunkText.substring(0, chunkText.length() - 1)) * 1024;
            long memberOffset = Long.parseLong(field(out, "Data Offset").split(" ")[0]) * 512;
            long memberArray = Long.parseLong(field(out, "Array Size").split(" ")[0]) * 1024;
            assertEquals("left-symmetric", field(out, "Layout"), member.toString());
            assertEquals("clean", field(out, "State"), member.toString());
            assertTrue(!out.contains("Reshape pos'n"), member + " is still reshaping:\n" + out);
            Matcher role = Pattern.compile("Active device (\\d+)").matcher(field(out, "Device Role"));
            if (!role.find()) {
                continue;   // a spare
            }
            if (byRole == null) {
                byRole = new FileChannel[devices];
                chunk = memberChunk;
                dataOffset = memberOffset;
                arrayBytes = memberArray;
            }
            assertEquals(byRole.length, devices, member + ": raid devices");
            assertEquals(chunk, memberChunk, member + ": chunk");
            assertEquals(dataOffset, memberOffset, member + ": data offset");
            assertEquals(arrayBytes, memberArray, member + ": array size");
            int r = Integer.parseInt(role.group(1));
            if (byRole[r] != null) {
                fail("role " + r + " twice, again in " + member);
            }
            byRole[r] = FileChannel.open(member, StandardOpenOption.READ);
        }
        if (byRole == null) {
            fail("no active member among " + members);
        }
        for (int r = 0; r < byRole.length; r++) {
            if (byRole[r] == null) {
                fail("role " + r + " has no member among " + members);
            }
        }
        return new MdReference(byRole, chunk, dataOffset, arrayBytes);
    }

    /** What mdadm says follows {@code name :} on its line. */
    public static String field(String examine, String name) {
        Matcher m = Pattern.compile("^\\s*" + Pattern.quote(name) + " : (.*)$", Pattern.MULTILINE).matcher(examine);
        if (!m.find()) {
            fail("mdadm --examine prints no '" + name + "':\n" + examine);
        }
        return m.group(1).trim();
    }

    public int members() {
        return byRole.length;
    }

    public int chunk() {
        return chunk;
    }

    public long size() {
        return arrayBytes;
    }

    /** Reads array bytes {@code [offset, offset + dst.remaining())} chunk by chunk from the data members. */
    public void read(long offset, ByteBuffer dst) throws IOException {
        int n = byRole.length;
        long rowData = (long) chunk * (n - 1);
        while (dst.hasRemaining()) {
            long row = offset / rowData;
            int dataIndex = (int) (offset % rowData / chunk);
            int within = (int) (offset % chunk);
            int parity = n - 1 - (int) (row % n);
            int role = (parity + 1 + dataIndex) % n;
            int length = Math.min(chunk - within, dst.remaining());
            ByteBuffer piece = dst.slice().limit(length);
            readFully(byRole[role], dataOffset + row * chunk + within, piece);
            dst.position(dst.position() + length);
            offset += length;
        }
    }

    /** Fails unless every row's chunks on all members XOR to zero. */
    public void assertParityConsistent() throws IOException {
        long rows = arrayBytes / ((long) chunk * (byRole.length - 1));
        ByteBuffer one = ByteBuffer.allocate(chunk);
        long[] acc = new long[chunk / 8];
        for (long row = 0; row < rows; row++) {
            java.util.Arrays.fill(acc, 0);
            for (FileChannel member : byRole) {
                one.clear();
                readFully(member, dataOffset + row * chunk, one);
                one.flip();
                for (int i = 0; i < acc.length; i++) {
                    acc[i] ^= one.getLong(i * 8);
                }
            }
            for (int i = 0; i < acc.length; i++) {
                if (acc[i] != 0) {
                    fail("row " + row + ": parity inconsistent at byte " + i * 8);
                }
            }
        }
    }

    private static void readFully(FileChannel channel, long position, ByteBuffer dst) throws IOException {
        while (dst.hasRemaining()) {
            int n = channel.read(dst, position);
            if (n < 0) {
                fail("member ends before byte " + position);
            }
            position += n;
        }
    }

    @Override
    public void close() throws IOException {
        for (FileChannel c : byRole) {
            c.close();
        }
    }
}
