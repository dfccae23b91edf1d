package io.stripestack.raid5;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The md version-1 superblock (struct mdp_superblock_1 of the kernel's md_p.h) as mdadm's metadata 1.2
 * places it: {@value #OFFSET_BYTES} bytes from the start of each member, little-endian, 256 fixed bytes
 * followed by one 16-bit role per device number ({@code max_dev} of them).
 *
 * <p>Checksum ({@code sb_csum}): the 32-bit little-endian words of the first {@code 256 + 2 * max_dev}
 * bytes, with {@code sb_csum} taken as zero, summed into 64 bits; the result is the low 32 bits plus the
 * high 32 bits, truncated to 32 bits.
 *
 * <p>Not thread-safe: a plain value holder. An open array keeps one as the template of its members'
 * superblocks ({@code Superblocks}) and changes it only under its state lock; each write encodes a copy.
 */
public final class Md1Superblock {
    /** Byte offset of the superblock in a member (metadata 1.2: 8 sectors). */
    public static final int OFFSET_BYTES = 4096;
    /** Bytes written and read for the superblock (one 4 KiB block, the rest zero). */
    public static final int BLOCK_BYTES = 4096;
    public static final int MAGIC = 0xa92b4efc;
    public static final int ROLE_SPARE = 0xffff;
    public static final int ROLE_FAULTY = 0xfffe;
    /** {@code resync_offset} of an array whose parity is known to be in sync (mdadm shows "clean"). */
    public static final long RESYNC_DONE = -1L;
    /** feature_map bit: {@link #recoveryOffset} is valid (a member being rebuilt; md's MD_FEATURE_RECOVERY_OFFSET). */
    public static final int FEATURE_RECOVERY_OFFSET = 2;
    /** feature_map bit: {@link #bitmapOffset} locates an internal write-intent bitmap (MD_FEATURE_BITMAP_OFFSET). */
    public static final int FEATURE_BITMAP = 1;
    /**
     * feature_map bit: the member's bad-block log holds entries (MD_FEATURE_BAD_BLOCKS). The kernel sets it
     * only while the log is non-empty; the log's space ({@link #bblogOffset}, {@link #bblogSize}) is
     * reserved by mdadm whether or not the bit is set. See {@link MdBadBlockLog}.
     */
    public static final int FEATURE_BAD_BLOCKS = 8;
    /**
     * feature_map bit: the members hold a partial parity log of one unit (MD_FEATURE_PPL; mdadm's "Consistency
     * Policy : ppl"), located by {@link #pplOffset} and {@link #pplSize}, which share the bytes of bitmap_offset:
     * an array has a write-intent bitmap or a partial parity log, never both. The kernel sets it for an area
     * smaller than {@link PartialParityLog#MULTIPLE_UNITS_BYTES}, {@link #FEATURE_MULTIPLE_PPLS} otherwise.
     */
    public static final int FEATURE_PPL = 0x400;
    /**
     * feature_map bit: the members hold a partial parity log whose area has room for several units one after
     * another (MD_FEATURE_MULTIPLE_PPLS). It stands in for {@link #FEATURE_PPL}, never beside it: md.c refuses a
     * superblock with both (the member is then left out of the array), and reads the log's offset and size
     * when either is set.
     */
    public static final int FEATURE_MULTIPLE_PPLS = 0x800;
    /** Either partial parity log bit. */
    public static final int FEATURE_ANY_PPL = FEATURE_PPL | FEATURE_MULTIPLE_PPLS;
    /**
     * feature_map bit: a reshape is under way (MD_FEATURE_RESHAPE_ACTIVE); {@link #reshapePosition},
     * {@link #deltaDisks}, {@link #newLevel}, {@link #newLayout} and {@link #newChunkSectors} describe it, and
     * {@link #raidDisks} is already the new member count.
     */
    public static final int FEATURE_RESHAPE_ACTIVE = 4;
    /** feature_map bit: the reshape runs from the end towards the start (MD_FEATURE_RESHAPE_BACKWARDS); never written here. */
    public static final int FEATURE_RESHAPE_BACKWARDS = 0x20;
    /** feature_map bit: {@link #newOffset} is valid, the new geometry's data starts elsewhere (MD_FEATURE_NEW_OFFSET). */
    public static final int FEATURE_NEW_OFFSET = 0x40;
    /**
     * feature_map bit md calls MD_FEATURE_RECOVERY_BITMAP (a rebuild guided by the bitmap; meaningful only beside
     * {@link #FEATURE_RECOVERY_OFFSET}). Earlier stripestack builds wrote it by mistake for {@link #FEATURE_NEW_OFFSET}
     * while a reshape ran; {@link #decode} reads it as that on such a superblock only (reshape active, no recovery
     * offset, a new offset recorded), so an array they left mid-reshape still resumes, and the next write is right.
     */
    static final int FEATURE_RECOVERY_BITMAP = 0x80;
    private static final int FIXED_BYTES = 256;
    private static final int MAX_ROLES = (BLOCK_BYTES - FIXED_BYTES) / 2;

    public byte[] setUuid = new byte[16];
    public String setName = "";
    /**
     * Creation time: seconds since the epoch in the low 40 bits, the high 24 bits 0. The kernel's md_p.h
     * reserves the high bits for microseconds, but neither mdadm nor the kernel writes them (both store plain
     * seconds), and a kernel that reads the field unmasked (6.1 does) shows a nonzero value there as a date in
     * 2106; {@link #encode} therefore always writes them as 0.
     */
    public long ctime;
    public int level = 5;
    public int layout;
    /** Used size of each member's data area, in 512-byte sectors (a multiple of the chunk). */
    public long sizeSectors;
    public int chunkSectors;
    public int raidDisks;
    public long dataOffsetSectors;
    public long dataSizeSectors;
    public long superOffsetSectors = OFFSET_BYTES / 512;
    /** Sectors of this member's data area already rebuilt; meaningful with {@link #FEATURE_RECOVERY_OFFSET}. */
    public long recoveryOffset;
    /**
     * feature_map; this engine writes {@link #FEATURE_BITMAP} or {@link #FEATURE_PPL}, {@link #FEATURE_RECOVERY_OFFSET},
     * and {@link #FEATURE_RESHAPE_ACTIVE} with {@link #FEATURE_NEW_OFFSET} while a grow runs.
     */
    public int featureMap;
    /** Sectors from the superblock to the write-intent bitmap (signed); meaningful with {@link #FEATURE_BITMAP}. */
    public int bitmapOffset;
    /** Sectors from the superblock to the partial parity log (signed 16 bits); meaningful with {@link #FEATURE_PPL}. */
    public int pplOffset;
    /** Length of the partial parity log area in sectors (16 bits); meaningful with {@link #FEATURE_PPL}. */
    public int pplSize;
    public int devNumber;
    /** With {@link #FEATURE_RESHAPE_ACTIVE}: array sectors already in the new geometry (md's reshape_position). */
    public long reshapePosition;
    /** New member count minus the old one (signed); meaningful with {@link #FEATURE_RESHAPE_ACTIVE}. */
    public int deltaDisks;
    public int newLevel = 5;
    public int newLayout;
    public int newChunkSectors;
    /** Sectors to add to {@link #dataOffsetSectors} for the new geometry (signed); with {@link #FEATURE_NEW_OFFSET}. */
    public int newOffset;
    public byte[] deviceUuid = new byte[16];
    /** Bad-block log: entries' sector and length are in units of {@code 1 << bblogShift} sectors. */
    public int bblogShift;
    /** Bad-block log: its length in sectors (0: none reserved); 8 (512 entries) from mdadm. */
    public int bblogSize;
    /** Bad-block log: sectors from the superblock to the log (signed; 0: none reserved). */
    public int bblogOffset;
    /** Last superblock update, in the same format as {@link #ctime} (seconds, high 24 bits 0). */
    public long utime;
    public long events;
    public long resyncOffset = RESYNC_DONE;
    /** Role of each device number: 0..raid_disks-1 active, {@link #ROLE_FAULTY}, {@link #ROLE_SPARE}. */
    public int[] devRoles = new int[0];

    /**
     * md's ctime/utime value for a wall-clock instant in milliseconds: what mdadm and the kernel write, whole
     * seconds with the high 24 bits 0 (the sub-second part is dropped, never stored in the high bits).
     */
    public static long mdTime(long epochMillis) {
        return mdTimeSeconds(Math.floorDiv(epochMillis, 1000L));
    }

    /** Seconds since the epoch of an md time value. */
    public static long mdTimeSeconds(long mdTime) {
        return mdTime & 0xff_ffff_ffffL;
    }

    /** Whether the member has room reserved for md's bad-block log (mdadm's "Bad Block Log : N entries available"). */
    public boolean hasBadBlockLog() {
        return bblogSize > 0 && bblogOffset != 0;
    }

    /** Whether feature_map says the member's bad-block log holds entries. */
    public boolean hasBadBlocks() {
        return (featureMap & FEATURE_BAD_BLOCKS) != 0;
    }

    public boolean hasBitmap() {
        return (featureMap & FEATURE_BITMAP) != 0;
    }

    /** Whether the members hold a partial parity log: either of md's two bits says so. */
    public boolean hasPpl() {
        return (featureMap & FEATURE_ANY_PPL) != 0;
    }

    /** Whether this member is part-way through a rebuild (its data is valid below {@link #recoveryOffset}). */
    public boolean isRecovering() {
        return (featureMap & FEATURE_RECOVERY_OFFSET) != 0;
    }

    public boolean isReshaping() {
        return (featureMap & FEATURE_RESHAPE_ACTIVE) != 0;
    }

    /** Whether {@link #resyncOffset} says the array was shut down cleanly. */
    public boolean isClean() {
        return resyncOffset == RESYNC_DONE;
    }

    public Md1Superblock copy() {
        Md1Superblock c = new Md1Superblock();
        c.setUuid = setUuid.clone();
        c.setName = setName;
        c.ctime = ctime;
        c.level = level;
        c.layout = layout;
        c.sizeSectors = sizeSectors;
        c.chunkSectors = chunkSectors;
        c.raidDisks = raidDisks;
        c.dataOffsetSectors = dataOffsetSectors;
        c.dataSizeSectors = dataSizeSectors;
        c.superOffsetSectors = superOffsetSectors;
        c.recoveryOffset = recoveryOffset;
        c.featureMap = featureMap;
        c.bitmapOffset = bitmapOffset;
        c.pplOffset = pplOffset;
        c.pplSize = pplSize;
        c.devNumber = devNumber;
        c.reshapePosition = reshapePosition;
        c.deltaDisks = deltaDisks;
        c.newLevel = newLevel;
        c.newLayout = newLayout;
        c.newChunkSectors = newChunkSectors;
        c.newOffset = newOffset;
        c.deviceUuid = deviceUuid.clone();
        c.bblogShift = bblogShift;
        c.bblogSize = bblogSize;
        c.bblogOffset = bblogOffset;
        c.utime = utime;
        c.events = events;
        c.resyncOffset = resyncOffset;
        c.devRoles = devRoles.clone();
        return c;
    }

    /** The superblock as the {@value #BLOCK_BYTES}-byte block to write at {@link #OFFSET_BYTES}, checksum set. */
    public ByteBuffer encode() {
        if (devRoles.length > MAX_ROLES) {
            throw new IllegalStateException("max_dev " + devRoles.length + " exceeds " + MAX_ROLES);
        }
        ByteBuffer b = ByteBuffer.allocate(BLOCK_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, MAGIC);
        b.putInt(4, 1);                 // major_version
        b.putInt(8, featureMap);        // bitmap or PPL, recovery offset, reshape: never bad blocks
        b.put(16, setUuid);
        byte[] name = setName.getBytes(StandardCharsets.UTF_8);
        b.put(32, name, 0, Math.min(32, name.length));
        b.putLong(64, mdTimeSeconds(ctime));   // high 24 bits 0, also for a value read from an older member
        b.putInt(72, level);
        b.putInt(76, layout);
        b.putLong(80, sizeSectors);
        b.putInt(88, chunkSectors);
        b.putInt(92, raidDisks);
        if (hasPpl()) {
            b.putShort(96, (short) pplOffset);
            b.putShort(98, (short) pplSize);
        } else {
            b.putInt(96, bitmapOffset);
        }
        boolean reshaping = isReshaping();
        // md keeps new_level/new_layout/new_chunk equal to the current ones when no reshape is in progress
        b.putInt(100, reshaping ? newLevel : level);
        b.putLong(104, reshaping ? reshapePosition : 0);
        b.putInt(112, reshaping ? deltaDisks : 0);
        b.putInt(116, reshaping ? newLayout : layout);
        b.putInt(120, reshaping ? newChunkSectors : chunkSectors);
        b.putInt(124, (featureMap & FEATURE_NEW_OFFSET) != 0 ? newOffset : 0);
        b.putLong(128, dataOffsetSectors);
        b.putLong(136, dataSizeSectors);
        b.putLong(144, superOffsetSectors);
        b.putLong(152, recoveryOffset);
        b.putInt(160, devNumber);
        b.put(168, deviceUuid);
        b.put(185, (byte) bblogShift);
        b.putShort(186, (short) bblogSize);
        b.putInt(188, bblogOffset);
        b.putLong(192, mdTimeSeconds(utime));
        b.putLong(200, events);
        b.putLong(208, resyncOffset);
        b.putInt(220, devRoles.length); // max_dev
        for (int i = 0; i < devRoles.length; i++) {
            b.putShort(FIXED_BYTES + 2 * i, (short) devRoles[i]);
        }
        b.putInt(216, checksum(b, devRoles.length));
        return b;
    }

    /**
     * Decodes a superblock block read from {@link #OFFSET_BYTES}.
     *
     * @param member the member's name, for error messages
     * @throws IllegalArgumentException naming the member when it holds no valid md 1.x superblock
     */
    public static Md1Superblock decode(ByteBuffer block, String member) {
        ByteBuffer b = block.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        b.position(0);
        if (b.remaining() < BLOCK_BYTES) {
            throw new IllegalArgumentException(member + ": superblock block is only " + b.remaining() + " bytes");
        }
        int magic = b.getInt(0);
        if (magic != MAGIC) {
            throw new IllegalArgumentException(member + ": no md superblock at byte " + OFFSET_BYTES
                    + " (magic 0x" + Integer.toHexString(magic) + ", expected 0xa92b4efc); it is not a RAID member "
                    + "created with metadata 1.2 -- check the member list");
        }
        if (b.getInt(4) != 1) {
            throw new IllegalArgumentException(member + ": md superblock major version " + b.getInt(4) + " is not 1");
        }
        int maxDev = b.getInt(220);
        if (maxDev < 0 || maxDev > MAX_ROLES) {
            throw new IllegalArgumentException(member + ": md superblock max_dev " + maxDev + " is out of range");
        }
        int stored = b.getInt(216);
        int computed = checksum(b, maxDev);
        if (stored != computed) {
            throw new IllegalArgumentException(member + ": md superblock checksum 0x" + Integer.toHexString(stored)
                    + " does not match its contents (0x" + Integer.toHexString(computed)
                    + "); the superblock is damaged -- treat the member as missing and replace it");
        }
        Md1Superblock sb = new Md1Superblock();
        b.get(16, sb.setUuid);
        byte[] name = new byte[32];
        b.get(32, name);
        int len = 0;
        while (len < name.length && name[len] != 0) {
            len++;
        }
        sb.setName = new String(name, 0, len, StandardCharsets.UTF_8);
        sb.ctime = b.getLong(64);
        sb.level = b.getInt(72);
        sb.layout = b.getInt(76);
        sb.sizeSectors = b.getLong(80);
        sb.chunkSectors = b.getInt(88);
        sb.raidDisks = b.getInt(92);
        sb.dataOffsetSectors = b.getLong(128);
        sb.dataSizeSectors = b.getLong(136);
        sb.superOffsetSectors = b.getLong(144);
        sb.recoveryOffset = b.getLong(152);
        sb.featureMap = b.getInt(8);
        if (sb.hasPpl()) {
            sb.pplOffset = b.getShort(96);
            sb.pplSize = Short.toUnsignedInt(b.getShort(98));
        } else {
            sb.bitmapOffset = b.getInt(96);
        }
        sb.newLevel = b.getInt(100);
        sb.reshapePosition = b.getLong(104);
        sb.deltaDisks = b.getInt(112);
        sb.newLayout = b.getInt(116);
        sb.newChunkSectors = b.getInt(120);
        sb.newOffset = b.getInt(124);
        int legacyNewOffset = FEATURE_RESHAPE_ACTIVE | FEATURE_RECOVERY_BITMAP;
        if ((sb.featureMap & (legacyNewOffset | FEATURE_RECOVERY_OFFSET | FEATURE_NEW_OFFSET)) == legacyNewOffset
                && sb.newOffset != 0) {
            sb.featureMap = (sb.featureMap & ~FEATURE_RECOVERY_BITMAP) | FEATURE_NEW_OFFSET;
        }
        sb.devNumber = b.getInt(160);
        b.get(168, sb.deviceUuid);
        sb.bblogShift = Byte.toUnsignedInt(b.get(185));
        sb.bblogSize = Short.toUnsignedInt(b.getShort(186));
        sb.bblogOffset = b.getInt(188);
        sb.utime = b.getLong(192);
        sb.events = b.getLong(200);
        sb.resyncOffset = b.getLong(208);
        sb.devRoles = new int[maxDev];
        for (int i = 0; i < maxDev; i++) {
            sb.devRoles[i] = Short.toUnsignedInt(b.getShort(FIXED_BYTES + 2 * i));
        }
        return sb;
    }

    /** md's sb_csum over the first {@code 256 + 2 * maxDev} bytes with the checksum field read as zero. */
    static int checksum(ByteBuffer littleEndian, int maxDev) {
        int size = FIXED_BYTES + 2 * maxDev;
        long sum = 0;
        int i = 0;
        for (; i + 4 <= size; i += 4) {
            if (i != 216) {
                sum += Integer.toUnsignedLong(littleEndian.getInt(i));
            }
        }
        if (size - i == 2) {
            sum += Short.toUnsignedInt(littleEndian.getShort(i));
        }
        return (int) ((sum & 0xffff_ffffL) + (sum >>> 32));
    }

    /** The set UUID as mdadm prints it: four groups of 8 hex digits separated by ':'. */
    public static String formatUuid(byte[] uuid) {
        StringBuilder s = new StringBuilder(35);
        for (int i = 0; i < uuid.length; i++) {
            if (i > 0 && i % 4 == 0) {
                s.append(':');
            }
            s.append(Character.forDigit((uuid[i] >> 4) & 0xf, 16)).append(Character.forDigit(uuid[i] & 0xf, 16));
        }
        return s.toString();
    }

    public boolean sameSet(Md1Superblock other) {
        return Arrays.equals(setUuid, other.setUuid);
    }
}
