package io.stripestack.crypto.luks;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.crypto.CryptSpec;
import io.stripestack.crypto.SectorCipher;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import javax.crypto.Cipher;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Header-area I/O on a {@link BlockDevice} at arbitrary byte offsets (the device wants whole logical blocks,
 * LUKS structures are 512-byte or 4 KiB granular), and keyslot material encryption with the dm-crypt sector
 * cipher: keyslot areas are encrypted in 512-byte sectors numbered from 0 at the area's start, as cryptsetup
 * does. Stateless; the callers are single-threaded administrative operations.
 */
final class LuksIo {
    static final int SECTOR = 512;

    private LuksIo() {
    }

    /** Reads {@code length} bytes at {@code offset}, refusing ranges beyond the device's end. */
    static byte[] read(BlockDevice device, long offset, int length) throws IOException {
        if (offset < 0 || offset + length > device.size()) {
            throw new LuksHeaderException(device.name() + ": the LUKS header says bytes [" + offset + ", " + (offset + length)
                    + ") hold header data, but the device has only " + device.size() + " bytes; the header is corrupt "
                    + "or belongs to a larger device");
        }
        long block = device.logicalBlockSize();
        long start = offset - offset % block;
        long end = roundUp(offset + length, block);
        ByteBuffer buffer = ByteBuffer.allocate(Math.toIntExact(end - start));
        device.read(start, buffer);
        byte[] out = new byte[length];
        buffer.get(Math.toIntExact(offset - start), out);
        if (buffer.hasArray()) {
            Arrays.fill(buffer.array(), (byte) 0);
        }
        return out;
    }

    /** Writes {@code data} at {@code offset}, reading and merging partial blocks at either end. */
    static void write(BlockDevice device, long offset, byte[] data) throws IOException {
        if (offset < 0 || offset + data.length > device.size()) {
            throw new IOException(device.name() + ": cannot write LUKS header bytes [" + offset + ", "
                    + (offset + data.length) + ") on a device of " + device.size() + " bytes");
        }
        long block = device.logicalBlockSize();
        long start = offset - offset % block;
        long end = roundUp(offset + data.length, block);
        ByteBuffer buffer = ByteBuffer.allocate(Math.toIntExact(end - start));
        if (start != offset || end != offset + data.length) {
            device.read(start, buffer);
            buffer.clear();
        }
        buffer.put(Math.toIntExact(offset - start), data);
        device.write(start, buffer);
        Arrays.fill(buffer.array(), (byte) 0);
    }

    /**
     * Overwrites {@code [offset, offset + length)} with random-looking bytes, as cryptsetup wipes keyslot areas:
     * an AES-256-CTR keystream under a fresh random key and IV, several times faster than SecureRandom for the
     * 16 MiB to 128 MiB of a LUKS2 keyslots area and indistinguishable from it without the key, which is dropped.
     */
    static void wipeRandom(BlockDevice device, long offset, long length, SecureRandom random) throws IOException {
        byte[] key = new byte[32];
        byte[] iv = new byte[16];
        random.nextBytes(key);
        random.nextBytes(iv);
        Cipher keystream;
        try {
            keystream = Cipher.getInstance("AES/CTR/NoPadding");
            keystream.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "AES"), new IvParameterSpec(iv));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JVM lacks AES/CTR, which every Java 17 runtime provides", e);
        } finally {
            Arrays.fill(key, (byte) 0);
        }
        byte[] zeros = new byte[(int) Math.min(length, 1 << 20)];
        for (long done = 0; done < length; done += zeros.length) {
            int n = (int) Math.min(zeros.length, length - done);
            write(device, offset + done, keystream.update(zeros, 0, n));
        }
    }

    /** Overwrites {@code [offset, offset + length)} with zeros. */
    static void wipeZero(BlockDevice device, long offset, long length) throws IOException {
        byte[] zeros = new byte[(int) Math.min(length, 1 << 20)];
        for (long done = 0; done < length; done += zeros.length) {
            int n = (int) Math.min(zeros.length, length - done);
            write(device, offset + done, n == zeros.length ? zeros : new byte[n]);
        }
    }

    /**
     * Encrypts or decrypts keyslot material in place with the area's cipher under {@code key}, IV sector 0 at
     * the area's first byte. {@code material.length} must be a multiple of 512.
     */
    static void cryptArea(String cipherSpec, byte[] key, byte[] material, boolean encrypt) {
        try (SectorCipher cipher = SectorCipher.create(CryptSpec.parse(cipherSpec), key, SECTOR, false)) {
            ByteBuffer region = ByteBuffer.wrap(material);
            if (encrypt) {
                cipher.encrypt(region, 0);
            } else {
                cipher.decrypt(region, 0);
            }
        }
    }

    static long roundUp(long value, long multiple) {
        return (value + multiple - 1) / multiple * multiple;
    }

    static String cString(byte[] header, int offset, int length) {
        int end = offset;
        while (end < offset + length && header[end] != 0) {
            end++;
        }
        return new String(header, offset, end - offset, java.nio.charset.StandardCharsets.US_ASCII);
    }

    /** True when the field holds printable ASCII up to a NUL that occurs inside the field. */
    static boolean isCleanCString(byte[] header, int offset, int length) {
        int i = offset;
        while (i < offset + length && header[i] != 0) {
            if (header[i] < 0x20 || header[i] > 0x7e) {
                return false;
            }
            i++;
        }
        return i < offset + length;
    }

    static void putCString(byte[] header, int offset, int length, String value) {
        byte[] bytes = value.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        if (bytes.length >= length) {
            throw new IllegalArgumentException("'" + value + "' does not fit a " + length + "-byte header field");
        }
        Arrays.fill(header, offset, offset + length, (byte) 0);
        System.arraycopy(bytes, 0, header, offset, bytes.length);
    }

    static String hex(byte[] bytes) {
        StringBuilder out = new StringBuilder(bytes.length * 3);
        for (int i = 0; i < bytes.length; i++) {
            if (i > 0) {
                out.append(i % 16 == 0 ? "\n\t            " : " ");
            }
            out.append(Character.forDigit((bytes[i] >> 4) & 0xf, 16)).append(Character.forDigit(bytes[i] & 0xf, 16));
        }
        return out.toString();
    }
}
