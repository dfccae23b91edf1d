package io.stripestack.targetserver.testing;

import io.stripestack.raid5.Raid5Layout;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A RAID-5 array read offline from its members' files (tgtd's backing files, local member files), the way a
 * third party would: each file's role, data offset, chunk and layout come from {@code mdadm --examine}, and a
 * block is read where md's layout puts it, or, when its member is left out, rebuilt as the XOR of the other
 * members' chunks of its row. Tests use it to see what the members really hold, without the server, and whether
 * Linux would take them as they are (every member clean, no reshape pending, parity consistent in every row).
 *
 * <p>Used by one test thread; the files are opened and closed per read.
 */
public final class MemberImages {
    private final Path[] byRole;
    private final long[] dataOffset;
    private final int chunk;
    private final Raid5Layout layout;
    private final long arrayBytes;
    /** What mdadm printed for each role. */
    private final String[] examined;

    private MemberImages(Path[] byRole, long[] dataOffset, int chunk, Raid5Layout layout, long arrayBytes,
                         String[] examined) {
        this.byRole = byRole;
        this.dataOffset = dataOffset;
        this.chunk = chunk;
        this.layout = layout;
        this.arrayBytes = arrayBytes;
        this.examined = examined;
    }

    /** Reads each file's md superblock with mdadm; the files must be all the array's members, in any order. */
    public static MemberImages examine(Path... files) throws Exception {
        Path[] byRole = new Path[files.length];
        long[] offsets = new long[files.length];
        String[] examined = new String[files.length];
        int chunk = 0;
        long arrayBytes = 0;
        Raid5Layout layout = null;
        for (Path f : files) {
            String out = ExternalTools.run("mdadm", "--examine", f.toString()).requireSuccess("mdadm --examine " + f)
                    .output();
            if (Integer.parseInt(field(out, "Raid Devices")) != files.length) {
                throw new IllegalArgumentException(f + ": not one of " + files.length + " members:\n" + out);
            }
            int role = Integer.parseInt(field(out, "Device Role").replace("Active device ", ""));
            if (byRole[role] != null) {
                throw new IllegalArgumentException("role " + role + " twice: " + byRole[role] + " and " + f);
            }
            byRole[role] = f;
            examined[role] = out;
            arrayBytes = Long.parseLong(field(out, "Array Size").split(" ")[0]) * 1024;
            offsets[role] = Long.parseLong(field(out, "Data Offset").replace(" sectors", "")) * 512;
            chunk = Integer.parseInt(field(out, "Chunk Size").replace("K", "")) << 10;
            layout = Raid5Layout.parse(field(out, "Layout"));
        }
        return new MemberImages(byRole, offsets, chunk, layout, arrayBytes, examined);
    }

    /** What {@code mdadm --examine} printed for the member in {@code role}. */
    public String examined(int role) {
        return examined[role];
    }

    public int members() {
        return byRole.length;
    }

    /** The array's size as mdadm states it. */
    public long size() {
        return arrayBytes;
    }

    /** Reads array bytes {@code [offset, offset + dst.remaining())}, chunk by chunk, from the data members. */
    public void read(long offset, ByteBuffer dst) throws IOException {
        while (dst.hasRemaining()) {
            int length = (int) Math.min(chunk - offset % chunk, dst.remaining());
            dst.put(read(offset, length, -1));
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
            for (int role = 0; role < byRole.length; role++) {
                readMember(role, row * chunk, one.clear());
                for (int i = 0; i < acc.length; i++) {
                    acc[i] ^= one.getLong(i * 8);
                }
            }
            for (int i = 0; i < acc.length; i++) {
                if (acc[i] != 0) {
                    throw new AssertionError("row " + row + ": parity inconsistent at byte " + i * 8);
                }
            }
        }
    }

    /** What mdadm says follows {@code name :} on its line. */
    public static String field(String examine, String name) {
        Matcher m = Pattern.compile("(?m)^\\s*" + Pattern.quote(name) + " : (.+)$").matcher(examine);
        if (!m.find()) {
            throw new IllegalArgumentException("mdadm --examine printed no '" + name + "':\n" + examine);
        }
        return m.group(1).strip();
    }

    public int chunk() {
        return chunk;
    }

    /** The role of the member in {@code file} (the server picks roles, not the configuration's order). */
    public int roleOf(Path file) {
        for (int role = 0; role < byRole.length; role++) {
            if (byRole[role].equals(file)) {
                return role;
            }
        }
        throw new IllegalArgumentException(file + " is not a member");
    }

    /** The role holding the array's byte {@code arrayOffset}. */
    public int roleOf(long arrayOffset) {
        long chunkIndex = arrayOffset / chunk;
        int dataChunks = byRole.length - 1;
        return layout.dataMember(chunkIndex / dataChunks, (int) (chunkIndex % dataChunks), byRole.length);
    }

    /** The stripe row holding the array's byte {@code arrayOffset}. */
    public long rowOf(long arrayOffset) {
        return arrayOffset / chunk / (byRole.length - 1);
    }

    /**
     * Reads {@code length} array bytes at {@code arrayOffset} (within one chunk) from the members; when the
     * chunk's member is {@code leftOut}, rebuilds it from the other members of the row, as a degraded md does.
     */
    public ByteBuffer read(long arrayOffset, int length, int leftOut) throws IOException {
        if (arrayOffset / chunk != (arrayOffset + length - 1) / chunk) {
            throw new IllegalArgumentException("a read within one chunk: " + arrayOffset + "+" + length);
        }
        long memberOffset = rowOf(arrayOffset) * chunk + arrayOffset % chunk;
        int role = roleOf(arrayOffset);
        ByteBuffer out = ByteBuffer.allocate(length);
        if (role != leftOut) {
            readMember(role, memberOffset, out);
            return out.flip();
        }
        ByteBuffer other = ByteBuffer.allocate(length);
        for (int r = 0; r < byRole.length; r++) {
            if (r == leftOut) {
                continue;
            }
            readMember(r, memberOffset, other.clear());
            for (int i = 0; i < length; i++) {
                out.put(i, (byte) (out.get(i) ^ other.get(i)));
            }
        }
        return out.limit(length);
    }

    private void readMember(int role, long memberOffset, ByteBuffer dst) throws IOException {
        try (FileChannel ch = FileChannel.open(byRole[role], StandardOpenOption.READ)) {
            long at = dataOffset[role] + memberOffset;
            while (dst.hasRemaining()) {
                if (ch.read(dst, at + dst.position()) < 0) {
                    throw new IOException(byRole[role] + ": ends before " + (at + dst.position()));
                }
            }
        }
    }
}
