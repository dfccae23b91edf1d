package io.stripestack.raid5;

/**
 * What {@code create} needs to lay out a new array: its name (stored in the superblock's set_name,
 * shown by mdadm as "Name"), chunk size, parity layout and where the data area starts on each member.
 *
 * @param name              array name, at most 32 bytes of UTF-8
 * @param chunkBytes        chunk size: a power of two from 4 KiB (mdadm's default 512 KiB)
 * @param layout            parity layout (mdadm's default left-symmetric)
 * @param dataOffsetSectors start of the data area on every member, in 512-byte sectors; at least 16
 *                          (the superblock sits at sectors 8..15)
 */
public record Raid5Config(String name, int chunkBytes, Raid5Layout layout, long dataOffsetSectors) {
    public static final int DEFAULT_CHUNK = 512 * 1024;
    public static final int MIN_CHUNK = 4096;
    /** 1 MiB: what mdadm 4.x picks for small members; see docs/raid5.md. */
    public static final long DEFAULT_DATA_OFFSET_SECTORS = 2048;
    /**
     * 2 MiB: the data offset mdadm 4.2 gives an array created with a partial parity log (its default plus the 1 MiB
     * of the log's area), so a reshape can move the data down and the log keep its whole area.
     */
    public static final long PPL_DATA_OFFSET_SECTORS = 4096;
    /**
     * The largest chunk whose partial parity log fits with the default data offset: the log holds a 4 KiB
     * header and one chunk of partial parity between the superblock's 8 KiB and the data at 1 MiB.
     */
    public static final int PPL_MAX_CHUNK_AT_DEFAULT_OFFSET = 512 * 1024;

    public Raid5Config {
        if (name == null || name.isEmpty() || name.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 32) {
            throw new IllegalArgumentException("array name '" + name + "' must be 1..32 bytes");
        }
        if (chunkBytes < MIN_CHUNK || Integer.bitCount(chunkBytes) != 1) {
            throw new IllegalArgumentException("chunk size " + chunkBytes + " bytes must be a power of two of at least "
                    + MIN_CHUNK + " (e.g. 524288 for mdadm's default 512 KiB)");
        }
        if (layout == null) {
            throw new IllegalArgumentException("layout must be given (left-symmetric is mdadm's default)");
        }
        if (dataOffsetSectors < 16 || dataOffsetSectors % 8 != 0) {
            throw new IllegalArgumentException("data offset " + dataOffsetSectors
                    + " sectors must be a multiple of 8 and at least 16 (the superblock uses sectors 8..15)");
        }
    }

    /** mdadm's defaults: 512 KiB chunks, left-symmetric, data at 1 MiB. */
    public static Raid5Config defaults(String name) {
        return new Raid5Config(name, DEFAULT_CHUNK, Raid5Layout.LEFT_SYMMETRIC, DEFAULT_DATA_OFFSET_SECTORS);
    }

    public Raid5Config withChunk(int bytes) {
        return new Raid5Config(name, bytes, layout, dataOffsetSectors);
    }

    public Raid5Config withDataOffset(long sectors) {
        return new Raid5Config(name, chunkBytes, layout, sectors);
    }

    public Raid5Config withLayout(Raid5Layout newLayout) {
        return new Raid5Config(name, chunkBytes, newLayout, dataOffsetSectors);
    }
}
