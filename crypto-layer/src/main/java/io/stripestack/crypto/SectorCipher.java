package io.stripestack.crypto;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.crypto.Cipher;
import javax.crypto.ShortBufferException;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * dm-crypt compatible encryption of whole sectors with one volume key: the ciphertext of a sector equals
 * what the kernel's dm-crypt writes for the same key, spec, sector size, IV sector and iv_large_sectors flag.
 *
 * <p><b>Sector numbers.</b> Every method takes {@code sector}: the dm-crypt sector of the region's first
 * byte, in 512-byte units counted from the IV origin, IV offset included, exactly as dm-crypt computes it
 * (payload-relative byte offset / 512 + {@code --skip}). With a sector size above 512 the n-th sector of a
 * region is {@code sector + n * sectorSize / 512}; its IV is that number, or that number divided by
 * {@code sectorSize / 512} when {@code ivLargeSectors} is set (then {@code sector} must be a multiple of
 * {@code sectorSize / 512}). With 512-byte sectors the sector number simply is the IV sector.
 *
 * <p><b>How.</b> XTS is built here on {@code AES/ECB/NoPadding} (IEEE 1619: tweak = AES-K2(IV), each block
 * XORed with the tweak before and after AES-K1, tweak times alpha per block); all tweaks of a chunk come from
 * one ECB call and all its data from another. CBC encryption is serial inside a sector (each block's
 * input needs the previous block's ciphertext) but independent across sectors, so a chunk of at least
 * {@link #MIN_LANES} sectors is encrypted as interleaved lanes: step j encrypts block j of every sector in one
 * {@code AES/ECB/NoPadding} call, which AES-NI pipelines, where one CBC stream waits out each block's full AES
 * latency. Shorter chunks run through an {@code AES/CBC/NoPadding} cipher per thread, initialised once and
 * never re-initialised: each sector's first plaintext block is XORed with its IV and with the cipher's running
 * chaining block, which turns the running chain into a fresh per-sector IV. Decryption runs a whole chunk
 * through one CBC call (parallel in the JCE) and corrects each sector's first block afterwards. ESSIV IVs
 * of a chunk are one ECB call under SHA-x(volume key).
 *
 * <p><b>Threads.</b> Thread-safe. Each thread gets its own initialised {@link Cipher} objects per
 * SectorCipher (a {@link ThreadLocal}, created on that thread's first call) and one set of scratch arrays
 * shared by all SectorCiphers on that thread; after that a call allocates nothing. {@link #close()} must not
 * race with calls in flight (the owner closes after its I/O has drained).
 *
 * <p><b>Keys.</b> The key bytes are copied at creation; {@link #close()} zeroes every copy this class holds
 * and drops the per-thread ciphers. The JCE provider's expanded key schedules inside those ciphers cannot be
 * wiped from outside; they become unreachable garbage. Keys never appear in messages or logs.
 */
public final class SectorCipher implements AutoCloseable {

    /** Bytes processed per pass through the scratch arrays; a multiple of every sector size. */
    static final int CHUNK = 64 * 1024;
    /**
     * Fewest sectors in a chunk for lane-interleaved CBC encryption: each step is one ECB call, so a chunk of
     * few large sectors pays more in calls than the pipelining gains (measured: 8 lanes of 4 KiB still gain).
     */
    static final int MIN_LANES = 8;
    private static final int BLOCK = 16;
    private static final int MIN_SECTOR = 512;
    private static final int MAX_SECTOR = 4096;
    private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONG_BE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private final CryptSpec spec;
    private final int sectorSize;
    private final boolean ivLargeSectors;
    /** sectorSize / 512: 512-byte units per sector. */
    private final int unitsPerSector;
    private final int unitShift;
    private final byte[] dataKey;
    private final byte[] tweakKey;
    private final byte[] essivKey;
    private final ThreadLocal<ThreadCiphers> ciphers = ThreadLocal.withInitial(this::newThreadCiphers);
    /** Every thread's ciphers, so close() can drop their keys' last references held here. */
    private final Set<ThreadCiphers> allCiphers = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private SectorCipher(CryptSpec spec, byte[] key, int sectorSize, boolean ivLargeSectors) {
        this.spec = spec;
        this.sectorSize = sectorSize;
        this.ivLargeSectors = ivLargeSectors;
        this.unitsPerSector = sectorSize / MIN_SECTOR;
        this.unitShift = Integer.numberOfTrailingZeros(unitsPerSector);
        if (spec.mode() == CryptSpec.Mode.XTS) {
            int half = key.length / 2;
            this.dataKey = Arrays.copyOfRange(key, 0, half);
            this.tweakKey = Arrays.copyOfRange(key, half, key.length);
        } else {
            this.dataKey = key.clone();
            this.tweakKey = null;
        }
        this.essivKey = spec.ivMode() == CryptSpec.IvMode.ESSIV ? essivSalt(spec.ivHash(), key) : null;
    }

    /**
     * Creates a sector cipher. The key is copied; the caller may zero its array afterwards.
     *
     * @param spec           the dm-crypt cipher spec, see {@link CryptSpec#parse}
     * @param key            the volume key: 16/24/32 bytes for CBC, 32/48/64 for XTS (data key then tweak key)
     * @param sectorSize     512, 1024, 2048 or 4096 bytes
     * @param ivLargeSectors dm-crypt's {@code iv_large_sectors}: IVs count {@code sectorSize} units instead of
     *                       512-byte units
     * @throws IllegalArgumentException for an invalid key length or sector size (the message never shows key bytes)
     */
    public static SectorCipher create(CryptSpec spec, byte[] key, int sectorSize, boolean ivLargeSectors) {
        spec.checkKeyLength(key.length);
        if (sectorSize < MIN_SECTOR || sectorSize > MAX_SECTOR || Integer.bitCount(sectorSize) != 1) {
            throw new IllegalArgumentException("crypto sector size " + sectorSize
                    + " is invalid; use a power of two from 512 to 4096 (cryptsetup --sector-size)");
        }
        SectorCipher cipher = new SectorCipher(spec, key, sectorSize, ivLargeSectors);
        cipher.ciphers.get(); // fail now, not on the first I/O, if the JCE lacks a transformation
        return cipher;
    }

    public CryptSpec spec() {
        return spec;
    }

    public int sectorSize() {
        return sectorSize;
    }

    public boolean ivLargeSectors() {
        return ivLargeSectors;
    }

    /** Encrypts {@code region}'s bytes from position to limit in place; position and limit stay as they are. */
    public void encrypt(ByteBuffer region, long sector) {
        process(true, region, region.position(), region, region.position(), region.remaining(), sector);
    }

    /** Decrypts {@code region}'s bytes from position to limit in place; position and limit stay as they are. */
    public void decrypt(ByteBuffer region, long sector) {
        process(false, region, region.position(), region, region.position(), region.remaining(), sector);
    }

    /**
     * Encrypts {@code length} bytes of {@code src} at absolute index {@code srcIndex} into {@code dst} at
     * {@code dstIndex}. {@code src} is only read; no position or limit changes. {@code src} and {@code dst}
     * may be the same buffer with the same index (in place), not otherwise overlapping.
     */
    public void encrypt(ByteBuffer src, int srcIndex, ByteBuffer dst, int dstIndex, int length, long sector) {
        process(true, src, srcIndex, dst, dstIndex, length, sector);
    }

    /** Decrypts like {@link #encrypt(ByteBuffer, int, ByteBuffer, int, int, long)} encrypts. */
    public void decrypt(ByteBuffer src, int srcIndex, ByteBuffer dst, int dstIndex, int length, long sector) {
        process(false, src, srcIndex, dst, dstIndex, length, sector);
    }

    /** Zeroes the key copies held here and drops every thread's ciphers; later calls throw. Idempotent. */
    @Override
    public void close() {
        closed = true;
        Arrays.fill(dataKey, (byte) 0);
        if (tweakKey != null) {
            Arrays.fill(tweakKey, (byte) 0);
        }
        if (essivKey != null) {
            Arrays.fill(essivKey, (byte) 0);
        }
        for (ThreadCiphers c : allCiphers) {
            c.clear();
        }
        allCiphers.clear();
    }

    @Override
    public String toString() {
        return spec + " sector " + sectorSize + (ivLargeSectors ? " iv_large_sectors" : "");
    }

    private void process(boolean encrypt, ByteBuffer src, int srcIndex, ByteBuffer dst, int dstIndex,
                         int length, long sector) {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        if (length % sectorSize != 0 || length < 0) {
            throw new IllegalArgumentException(length + " bytes is not a whole number of " + sectorSize
                    + "-byte crypto sectors");
        }
        if (ivLargeSectors && (sector & (unitsPerSector - 1)) != 0) {
            throw new IllegalArgumentException("sector " + sector + " (512-byte units) does not start a "
                    + sectorSize + "-byte crypto sector, required with iv_large_sectors");
        }
        ThreadCiphers c = ciphers.get();
        Scratch s = SCRATCH.get();
        try {
            for (int done = 0; done < length; done += CHUNK) {
                int n = Math.min(CHUNK, length - done);
                int sectors = n / sectorSize;
                long firstUnit = sector + (long) (done / sectorSize) * unitsPerSector;
                src.get(srcIndex + done, s.in, 0, n);
                byte[] ivs = sectorIvs(c, s, firstUnit, sectors);
                if (spec.mode() == CryptSpec.Mode.XTS) {
                    xts(encrypt, c, s, ivs, n, sectors);
                } else if (encrypt && sectors >= MIN_LANES) {
                    cbcEncryptLanes(c, s, ivs, sectors);
                } else if (encrypt) {
                    cbcEncrypt(c, s, ivs, sectors);
                } else {
                    cbcDecrypt(c, s, ivs, n, sectors);
                }
                dst.put(dstIndex + done, s.out, 0, n);
            }
        } catch (ShortBufferException e) {
            // The scratch arrays are sized for a chunk; reaching this is a bug, and the CBC chain state of this
            // thread can no longer be trusted.
            ciphers.remove();
            throw new IllegalStateException(this + ": cipher output buffer too small", e);
        }
    }

    /** Writes the IV of each sector of the chunk and returns the array holding them (ivA or ivB). */
    private byte[] sectorIvs(ThreadCiphers c, Scratch s, long firstUnit, int sectors) throws ShortBufferException {
        byte[] iv = s.ivA;
        for (int i = 0; i < sectors; i++) {
            long unit = firstUnit + (long) i * unitsPerSector;
            long ivSector = ivLargeSectors ? unit >>> unitShift : unit;
            int at = i * BLOCK;
            switch (spec.ivMode()) {
                case PLAIN -> {
                    LONG_LE.set(iv, at, ivSector & 0xffff_ffffL);
                    LONG_LE.set(iv, at + 8, 0L);
                }
                case PLAIN64, ESSIV -> {
                    LONG_LE.set(iv, at, ivSector);
                    LONG_LE.set(iv, at + 8, 0L);
                }
                case PLAIN64BE -> {
                    LONG_LE.set(iv, at, 0L);
                    LONG_BE.set(iv, at + 8, ivSector);
                }
            }
        }
        if (spec.ivMode() == CryptSpec.IvMode.ESSIV) {
            c.essiv.update(s.ivA, 0, sectors * BLOCK, s.ivB, 0);
            return s.ivB;
        }
        return iv;
    }

    private void xts(boolean encrypt, ThreadCiphers c, Scratch s, byte[] ivs, int n, int sectors)
            throws ShortBufferException {
        byte[] tweak0 = ivs == s.ivA ? s.ivB : s.ivA;
        c.tweak.update(ivs, 0, sectors * BLOCK, tweak0, 0);
        byte[] in = s.in;
        byte[] tweaks = s.tweaks;
        int blocksPerSector = sectorSize / BLOCK;
        for (int i = 0; i < sectors; i++) {
            long lo = (long) LONG_LE.get(tweak0, i * BLOCK);
            long hi = (long) LONG_LE.get(tweak0, i * BLOCK + 8);
            int at = i * sectorSize;
            for (int b = 0; b < blocksPerSector; b++, at += BLOCK) {
                LONG_LE.set(tweaks, at, lo);
                LONG_LE.set(tweaks, at + 8, hi);
                LONG_LE.set(in, at, (long) LONG_LE.get(in, at) ^ lo);
                LONG_LE.set(in, at + 8, (long) LONG_LE.get(in, at + 8) ^ hi);
                // multiply the tweak by alpha in GF(2^128), little-endian bit order (IEEE 1619 5.2)
                long carry = hi >> 63;
                hi = (hi << 1) | (lo >>> 63);
                lo = (lo << 1) ^ (carry & 0x87);
            }
        }
        (encrypt ? c.dataEncrypt : c.dataDecrypt).update(in, 0, n, s.out, 0);
        xorInto(s.out, tweaks, n);
    }

    private void cbcEncrypt(ThreadCiphers c, Scratch s, byte[] ivs, int sectors) throws ShortBufferException {
        byte[] in = s.in;
        byte[] out = s.out;
        for (int i = 0; i < sectors; i++) {
            int at = i * sectorSize;
            byte[] chain = i == 0 ? c.encryptChain : out;
            int chainAt = i == 0 ? 0 : at - BLOCK;
            // The cipher XORs its running chain block (the previous ciphertext block) into this block; adding
            // the same chain block here cancels it, leaving plaintext XOR this sector's IV.
            xorBlock(in, at, ivs, i * BLOCK, chain, chainAt);
            c.dataEncrypt.update(in, at, sectorSize, out, at);
        }
        System.arraycopy(out, sectors * sectorSize - BLOCK, c.encryptChain, 0, BLOCK);
    }

    /**
     * CBC-encrypts the chunk's sectors side by side (see the class comment). {@code ivs} holds each sector's IV
     * on entry and is overwritten: lane i of {@code inputs} is the next AES input of sector i (plaintext block
     * XOR the previous ciphertext block, the IV for block 0), lane i of {@code outputs} its ciphertext.
     */
    private void cbcEncryptLanes(ThreadCiphers c, Scratch s, byte[] ivs, int sectors) throws ShortBufferException {
        byte[] in = s.in;
        byte[] out = s.out;
        byte[] inputs = ivs;
        byte[] outputs = ivs == s.ivA ? s.ivB : s.ivA;
        int laneBytes = sectors * BLOCK;
        for (int i = 0, at = 0; i < sectors; i++, at += sectorSize) {
            int lane = i * BLOCK;
            LONG_LE.set(inputs, lane, (long) LONG_LE.get(inputs, lane) ^ (long) LONG_LE.get(in, at));
            LONG_LE.set(inputs, lane + 8, (long) LONG_LE.get(inputs, lane + 8) ^ (long) LONG_LE.get(in, at + 8));
        }
        int lastBlock = sectorSize - BLOCK;
        for (int block = 0; block < lastBlock; block += BLOCK) {
            c.laneEncrypt.update(inputs, 0, laneBytes, outputs, 0);
            for (int i = 0, at = block; i < sectors; i++, at += sectorSize) {
                int lane = i * BLOCK;
                long lo = (long) LONG_LE.get(outputs, lane);
                long hi = (long) LONG_LE.get(outputs, lane + 8);
                LONG_LE.set(out, at, lo);
                LONG_LE.set(out, at + 8, hi);
                LONG_LE.set(inputs, lane, lo ^ (long) LONG_LE.get(in, at + BLOCK));
                LONG_LE.set(inputs, lane + 8, hi ^ (long) LONG_LE.get(in, at + BLOCK + 8));
            }
        }
        c.laneEncrypt.update(inputs, 0, laneBytes, outputs, 0);
        for (int i = 0, at = lastBlock; i < sectors; i++, at += sectorSize) {
            int lane = i * BLOCK;
            LONG_LE.set(out, at, (long) LONG_LE.get(outputs, lane));
            LONG_LE.set(out, at + 8, (long) LONG_LE.get(outputs, lane + 8));
        }
    }

    private void cbcDecrypt(ThreadCiphers c, Scratch s, byte[] ivs, int n, int sectors) throws ShortBufferException {
        byte[] in = s.in;
        byte[] out = s.out;
        c.dataDecrypt.update(in, 0, n, out, 0);
        for (int i = 0; i < sectors; i++) {
            int at = i * sectorSize;
            // The cipher XORed the previous ciphertext block into this sector's first block; swap it for the IV.
            byte[] chain = i == 0 ? c.decryptChain : in;
            int chainAt = i == 0 ? 0 : at - BLOCK;
            xorBlock(out, at, ivs, i * BLOCK, chain, chainAt);
        }
        System.arraycopy(in, n - BLOCK, c.decryptChain, 0, BLOCK);
    }

    /** {@code target[at..at+16) ^= a[aAt..] ^ b[bAt..]}. */
    private static void xorBlock(byte[] target, int at, byte[] a, int aAt, byte[] b, int bAt) {
        LONG_LE.set(target, at, (long) LONG_LE.get(target, at) ^ (long) LONG_LE.get(a, aAt) ^ (long) LONG_LE.get(b, bAt));
        LONG_LE.set(target, at + 8, (long) LONG_LE.get(target, at + 8) ^ (long) LONG_LE.get(a, aAt + 8)
                ^ (long) LONG_LE.get(b, bAt + 8));
    }

    private static void xorInto(byte[] target, byte[] mask, int n) {
        for (int at = 0; at < n; at += 8) {
            LONG_LE.set(target, at, (long) LONG_LE.get(target, at) ^ (long) LONG_LE.get(mask, at));
        }
    }

    private static byte[] essivSalt(String hash, byte[] key) {
        try {
            return MessageDigest.getInstance(hash).digest(key);
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("ESSIV hash " + hash + " is not available in this JVM", e);
        }
    }

    private ThreadCiphers newThreadCiphers() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        try {
            ThreadCiphers c = new ThreadCiphers(spec, dataKey, tweakKey, essivKey);
            allCiphers.add(c);
            return c;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JVM cannot provide the AES transformations for " + spec, e);
        }
    }

    /**
     * One thread's initialised ciphers for one SectorCipher, and the running CBC chain blocks (the last
     * ciphertext block each CBC cipher has processed, i.e. its internal register). Used by its thread only.
     */
    private static final class ThreadCiphers {
        Cipher dataEncrypt;
        Cipher dataDecrypt;
        Cipher tweak;
        Cipher essiv;
        /** CBC only: AES-ECB under the data key, for lane-interleaved encryption. */
        Cipher laneEncrypt;
        final byte[] encryptChain = new byte[BLOCK];
        final byte[] decryptChain = new byte[BLOCK];

        ThreadCiphers(CryptSpec spec, byte[] dataKey, byte[] tweakKey, byte[] essivKey) throws GeneralSecurityException {
            SecretKeySpec data = new SecretKeySpec(dataKey, "AES");
            if (spec.mode() == CryptSpec.Mode.XTS) {
                dataEncrypt = ecb(Cipher.ENCRYPT_MODE, data);
                dataDecrypt = ecb(Cipher.DECRYPT_MODE, data);
                tweak = ecb(Cipher.ENCRYPT_MODE, new SecretKeySpec(tweakKey, "AES"));
            } else {
                IvParameterSpec zeroIv = new IvParameterSpec(new byte[BLOCK]);
                dataEncrypt = Cipher.getInstance("AES/CBC/NoPadding");
                dataEncrypt.init(Cipher.ENCRYPT_MODE, data, zeroIv);
                dataDecrypt = Cipher.getInstance("AES/CBC/NoPadding");
                dataDecrypt.init(Cipher.DECRYPT_MODE, data, zeroIv);
                laneEncrypt = ecb(Cipher.ENCRYPT_MODE, data);
            }
            if (essivKey != null) {
                essiv = ecb(Cipher.ENCRYPT_MODE, new SecretKeySpec(essivKey, "AES"));
            }
        }

        private static Cipher ecb(int mode, SecretKeySpec key) throws GeneralSecurityException {
            Cipher c = Cipher.getInstance("AES/ECB/NoPadding");
            c.init(mode, key);
            return c;
        }

        void clear() {
            dataEncrypt = null;
            dataDecrypt = null;
            tweak = null;
            essiv = null;
            laneEncrypt = null;
        }
    }

    /** Per-thread work arrays shared by every SectorCipher used on the thread (calls never nest). */
    private static final class Scratch {
        final byte[] in = new byte[CHUNK];
        final byte[] out = new byte[CHUNK];
        final byte[] tweaks = new byte[CHUNK];
        final byte[] ivA = new byte[CHUNK / MIN_SECTOR * BLOCK];
        final byte[] ivB = new byte[CHUNK / MIN_SECTOR * BLOCK];
    }
}
