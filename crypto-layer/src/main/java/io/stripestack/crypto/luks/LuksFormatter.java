package io.stripestack.crypto.luks;

import io.stripestack.blockdev.BlockDevice;
import java.io.IOException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.UUID;

/**
 * Writes a new LUKS1 or LUKS2 header with one keyslot (slot 0) onto a device, like {@code cryptsetup luksFormat}
 * with the same layout: the result is readable by cryptsetup and by {@link LuksHeader#read}. Everything in the
 * header area of the device is destroyed (the keyslot areas are overwritten with random bytes, the rest of
 * the header area with zeros); the payload is left as it is.
 *
 * <p>Layout rules (cryptsetup 2.6): LUKS1 places keyslot i at sector 8 + i x (its material rounded up to
 * 4 KiB) and the payload at the end of the last keyslot rounded up to the alignment (2056 -> 4096 sectors for a
 * 256-bit key and 1 MiB alignment). LUKS2 uses 16 KiB header copies and puts the data at 16 MiB rounded up
 * to the alignment with a keyslots area of 16 MiB - 32 KiB, or at an explicit offset with everything between
 * the second header copy and the data as keyslots area (at most 128 MiB). The alignment is {@code --align-payload} when given, otherwise 1 MiB, or the device's
 * optimal I/O size when 1 MiB is not a multiple of it (a RAID-5 stripe of three 512 KiB chunks: 1.5 MiB).
 *
 * <p>Stateless and thread-safe; the device must not be in use.
 */
public final class LuksFormatter {
    private static final long MIB = 1 << 20;
    private static final long LUKS2_DATA_OFFSET = 16 * MIB;
    private static final Duration DIGEST_TARGET = Duration.ofMillis(125);
    private static final int MIN_DIGEST_ITERATIONS = 1000;

    private LuksFormatter() {
    }

    /** Formats with a freshly generated random volume key. */
    public static LuksHeader format(BlockDevice device, LuksFormatOptions options, byte[] passphrase) throws IOException {
        SecureRandom random = new SecureRandom();
        byte[] key = new byte[options.keyBytes()];
        random.nextBytes(key);
        try {
            return format(device, options, passphrase, key);
        } finally {
            Arrays.fill(key, (byte) 0);
        }
    }

    /**
     * Formats with a given volume key (cryptsetup {@code --volume-key-file}), e.g. to put a LUKS header on
     * top of data encrypted in plain mode. The key is not kept.
     */
    public static LuksHeader format(BlockDevice device, LuksFormatOptions options, byte[] passphrase, byte[] volumeKey)
            throws IOException {
        if (volumeKey.length != options.keyBytes()) {
            throw new IllegalArgumentException("the volume key has " + volumeKey.length * 8 + " bits, the options say "
                    + options.keyBytes() * 8);
        }
        SecureRandom random = new SecureRandom();
        Kdf kdf = options.kdf() != null ? options.kdf()
                : options.version() == 1 ? KdfBenchmark.pbkdf2(options.hash(), KdfBenchmark.DEFAULT_TARGET, options.keyBytes())
                : KdfBenchmark.argon2idDefault();
        int digestIterations = options.digestIterations() > 0 ? options.digestIterations()
                : options.kdf() != null ? MIN_DIGEST_ITERATIONS
                : Math.max(MIN_DIGEST_ITERATIONS,
                        KdfBenchmark.pbkdf2(options.hash(), DIGEST_TARGET, options.hash().length()).iterations());
        byte[] digestSalt = new byte[Kdf.SALT_BYTES];
        random.nextBytes(digestSalt);
        String uuid = UUID.randomUUID().toString().toLowerCase(Locale.ROOT);
        long alignment = options.alignPayloadSectors() > 0 ? options.alignPayloadSectors() * LuksIo.SECTOR
                : defaultAlignment(device);

        LuksHeader header;
        if (options.version() == 1) {
            long headerEnd = Luks1Header.headerEndSectors(options.keyBytes());
            long payload = payloadSectors(device, options, headerEnd, alignment);
            LuksIo.wipeZero(device, 0, Luks1Header.KEYSLOT_ALIGN_SECTORS * LuksIo.SECTOR);
            LuksIo.wipeRandom(device, Luks1Header.KEYSLOT_ALIGN_SECTORS * LuksIo.SECTOR,
                    (headerEnd - Luks1Header.KEYSLOT_ALIGN_SECTORS) * LuksIo.SECTOR, random);
            LuksIo.wipeZero(device, headerEnd * LuksIo.SECTOR, (payload - headerEnd) * LuksIo.SECTOR);
            String spec = options.cipherSpec().toLowerCase(Locale.ROOT);
            int dash = spec.indexOf('-');
            byte[] digest = Luks1Header.masterKeyDigest(options.hash(), volumeKey, digestSalt, digestIterations);
            header = Luks1Header.create(device, Luks1Header.image(spec.substring(0, dash), spec.substring(dash + 1),
                    options.hash(), options.keyBytes(), payload, digest, digestSalt, digestIterations, uuid));
        } else {
            long hdrSize = Luks2Header.DEFAULT_HEADER_BYTES;
            long keyslotArea = LuksIo.roundUp(AfSplitter.splitLength(options.keyBytes(), AfSplitter.LUKS_STRIPES),
                    Luks2Metadata.AREA_ALIGN);
            long minimumSectors = (2 * hdrSize + keyslotArea) / LuksIo.SECTOR;
            long payload = options.payloadOffsetSectors() > 0
                    ? payloadSectors(device, options, minimumSectors, alignment)
                    : payloadSectors(device, options, LUKS2_DATA_OFFSET / LuksIo.SECTOR, alignment);
            long dataOffset = payload * LuksIo.SECTOR;
            if (dataOffset % options.sectorSize() != 0) {
                throw new IllegalArgumentException("payload offset " + payload + " sectors is not a multiple of the "
                        + options.sectorSize() + "-byte encryption sector");
            }
            // Alignment padding beyond 16 MiB stays unused; an explicit offset gives its whole room to keyslots.
            long keyslotsRoom = options.payloadOffsetSectors() > 0 ? dataOffset : LUKS2_DATA_OFFSET;
            long keyslotsSize = Math.min(Luks2Header.MAX_KEYSLOTS_BYTES, keyslotsRoom - 2 * hdrSize)
                    / Luks2Metadata.AREA_ALIGN * Luks2Metadata.AREA_ALIGN;
            LuksIo.wipeZero(device, 0, 2 * hdrSize);
            LuksIo.wipeRandom(device, 2 * hdrSize, keyslotsSize, random);
            LuksIo.wipeZero(device, 2 * hdrSize + keyslotsSize, dataOffset - 2 * hdrSize - keyslotsSize);
            byte[] digest = options.hash().pbkdf2(volumeKey, digestSalt, digestIterations, options.hash().length());
            header = Luks2Header.create(device, uuid, options.label(), hdrSize, keyslotsSize,
                    options.cipherSpec().toLowerCase(Locale.ROOT), dataOffset, options.sectorSize(), options.hash(),
                    digestIterations, digestSalt, digest, random);
        }
        try (VolumeKey key = new VolumeKey(volumeKey.clone(), -1)) {
            header.addKeyslot(key, passphrase, kdf, 0);
        }
        return header;
    }

    /** 1 MiB, or the optimal I/O size when 1 MiB is not a multiple of it (cryptsetup's topology rule). */
    static long defaultAlignment(BlockDevice device) {
        long optimal = device.geometry().optimalIo();
        return optimal > LuksIo.SECTOR && MIB % optimal != 0 ? optimal : MIB;
    }

    private static long payloadSectors(BlockDevice device, LuksFormatOptions options, long minimumSectors, long alignmentBytes)
            throws IOException {
        long payload;
        if (options.payloadOffsetSectors() > 0) {
            payload = options.payloadOffsetSectors();
            if (payload < minimumSectors) {
                throw new IllegalArgumentException("payload offset " + payload + " sectors is inside the LUKS"
                        + options.version() + " header, which needs " + minimumSectors + " sectors; give at least that");
            }
        } else {
            if (alignmentBytes % LuksIo.SECTOR != 0) {
                throw new IllegalArgumentException("payload alignment " + alignmentBytes + " bytes is not whole sectors");
            }
            payload = LuksIo.roundUp(minimumSectors, alignmentBytes / LuksIo.SECTOR);
        }
        if (payload * LuksIo.SECTOR + options.sectorSize() > device.size()) {
            throw new LuksHeaderException(device.name() + " has " + device.size() + " bytes, too small for a LUKS"
                    + options.version() + " header with its payload at byte " + payload * LuksIo.SECTOR
                    + "; use a larger device or a smaller --offset / --align-payload");
        }
        return payload;
    }
}
