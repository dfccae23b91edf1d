package io.stripestack.crypto.luks;

import io.stripestack.crypto.CryptSpec;

/**
 * What {@link LuksFormatter#format} creates, with cryptsetup's defaults and option names in mind.
 *
 * @param version              1 or 2 ({@code --type luks1|luks2})
 * @param cipherSpec           the dm-crypt cipher spec ({@code --cipher}), e.g. {@code aes-xts-plain64}
 * @param keyBytes             volume key length in bytes ({@code --key-size} / 8); 0 = 64 for XTS, 32 for CBC
 * @param hash                 the LUKS1 PBKDF2/AF hash and the LUKS2 digest hash ({@code --hash})
 * @param kdf                  the first keyslot's KDF and cost; null = measure one like cryptsetup
 *                             (PBKDF2 for LUKS1, Argon2id for LUKS2, about 2 s, see {@link KdfBenchmark})
 * @param alignPayloadSectors  payload alignment in 512-byte sectors ({@code --align-payload}); 0 = 1 MiB, or the
 *                             device's optimal I/O size when 1 MiB is not a multiple of it (as cryptsetup)
 * @param payloadOffsetSectors an explicit payload offset in 512-byte sectors ({@code --offset}); 0 = computed
 * @param sectorSize           LUKS2 encryption sector size ({@code --sector-size}: 512 to 4096); LUKS1 takes 512
 * @param label                LUKS2 label, or null
 * @param digestIterations     PBKDF2 iterations of the volume key digest; 0 = 1000 when {@code kdf} is given,
 *                             otherwise measured for 1/8 s (cryptsetup's rule)
 */
public record LuksFormatOptions(int version, String cipherSpec, int keyBytes, LuksHash hash, Kdf kdf,
                                long alignPayloadSectors, long payloadOffsetSectors, int sectorSize, String label,
                                int digestIterations) {

    public LuksFormatOptions {
        if (version != 1 && version != 2) {
            throw new IllegalArgumentException("LUKS version " + version + " does not exist; use 1 or 2");
        }
        CryptSpec spec = CryptSpec.parse(cipherSpec);
        if (keyBytes == 0) {
            keyBytes = spec.mode() == CryptSpec.Mode.XTS ? 64 : 32;
        }
        spec.checkKeyLength(keyBytes);
        if (hash == null) {
            throw new IllegalArgumentException("a hash is required (e.g. sha256)");
        }
        if (version == 1 && kdf != null && !(kdf instanceof Kdf.Pbkdf2)) {
            throw new IllegalArgumentException("LUKS1 keyslots use PBKDF2 only, not " + kdf.typeName() + "; use LUKS2 for Argon2");
        }
        if (version == 1 && kdf instanceof Kdf.Pbkdf2 pbkdf2 && pbkdf2.hash() != hash) {
            throw new IllegalArgumentException("LUKS1 keyslots use the header's hash (" + hash.luksName() + ") for PBKDF2, not "
                    + pbkdf2.hash().luksName() + "; give the same hash to both");
        }
        if (version == 1 && sectorSize != 512) {
            throw new IllegalArgumentException("LUKS1 encrypts 512-byte sectors only; use LUKS2 for --sector-size " + sectorSize);
        }
        if (sectorSize < 512 || sectorSize > 4096 || Integer.bitCount(sectorSize) != 1) {
            throw new IllegalArgumentException("sector size " + sectorSize + " is invalid; use 512, 1024, 2048 or 4096");
        }
        if (alignPayloadSectors < 0 || payloadOffsetSectors < 0 || digestIterations < 0) {
            throw new IllegalArgumentException("alignment, payload offset and digest iterations cannot be negative");
        }
        if (version == 1 && label != null) {
            throw new IllegalArgumentException("LUKS1 has no label; use LUKS2 for --label");
        }
        if (label != null && label.length() >= 48) {
            throw new IllegalArgumentException("a LUKS2 label has at most 47 characters");
        }
    }

    /** LUKS2, aes-xts-plain64, 512-bit key, sha256, Argon2id measured, 16 MiB data offset, 512-byte sectors. */
    public static LuksFormatOptions luks2() {
        return new LuksFormatOptions(2, "aes-xts-plain64", 0, LuksHash.SHA256, null, 0, 0, 512, null, 0);
    }

    /** LUKS1, aes-xts-plain64, 512-bit key, sha256, PBKDF2 measured, payload aligned to 1 MiB. */
    public static LuksFormatOptions luks1() {
        return new LuksFormatOptions(1, "aes-xts-plain64", 0, LuksHash.SHA256, null, 0, 0, 512, null, 0);
    }

    /** The data cipher and key size ({@code --cipher}, {@code --key-size}); {@code keyBits} 0 = the spec's default. */
    public LuksFormatOptions withCipher(String spec, int keyBits) {
        return new LuksFormatOptions(version, spec, keyBits / 8, hash, kdf, alignPayloadSectors, payloadOffsetSectors,
                sectorSize, label, digestIterations);
    }

    public LuksFormatOptions withHash(LuksHash newHash) {
        return new LuksFormatOptions(version, cipherSpec, keyBytes, newHash, kdf, alignPayloadSectors, payloadOffsetSectors,
                sectorSize, label, digestIterations);
    }

    public LuksFormatOptions withKdf(Kdf newKdf) {
        return new LuksFormatOptions(version, cipherSpec, keyBytes, hash, newKdf, alignPayloadSectors, payloadOffsetSectors,
                sectorSize, label, digestIterations);
    }

    public LuksFormatOptions withAlignPayload(long sectors) {
        return new LuksFormatOptions(version, cipherSpec, keyBytes, hash, kdf, sectors, payloadOffsetSectors, sectorSize,
                label, digestIterations);
    }

    public LuksFormatOptions withPayloadOffset(long sectors) {
        return new LuksFormatOptions(version, cipherSpec, keyBytes, hash, kdf, alignPayloadSectors, sectors, sectorSize,
                label, digestIterations);
    }

    public LuksFormatOptions withSectorSize(int bytes) {
        return new LuksFormatOptions(version, cipherSpec, keyBytes, hash, kdf, alignPayloadSectors, payloadOffsetSectors,
                bytes, label, digestIterations);
    }

    public LuksFormatOptions withLabel(String newLabel) {
        return new LuksFormatOptions(version, cipherSpec, keyBytes, hash, kdf, alignPayloadSectors, payloadOffsetSectors,
                sectorSize, newLabel, digestIterations);
    }

    public LuksFormatOptions withDigestIterations(int iterations) {
        return new LuksFormatOptions(version, cipherSpec, keyBytes, hash, kdf, alignPayloadSectors, payloadOffsetSectors,
                sectorSize, label, iterations);
    }
}
