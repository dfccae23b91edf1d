package io.stripestack.crypto.luks;

import org.bouncycastle.crypto.generators.Argon2BytesGenerator;
import org.bouncycastle.crypto.params.Argon2Parameters;

/**
 * A keyslot's key derivation function with its cost: turns a passphrase and a salt into the key that
 * decrypts the keyslot's material. Immutable and thread-safe; {@link #derive} keeps no reference to the
 * passphrase and the caller zeroes the result.
 */
public sealed interface Kdf permits Kdf.Pbkdf2, Kdf.Argon2 {

    /** Salt length cryptsetup uses for keyslots and digests (LUKS1 and LUKS2). */
    int SALT_BYTES = 32;

    /** {@code length} bytes derived from {@code passphrase} and {@code salt}. */
    byte[] derive(byte[] passphrase, byte[] salt, int length);

    /** The LUKS2 {@code kdf.type} name: {@code pbkdf2}, {@code argon2i} or {@code argon2id}. */
    String typeName();

    /** A one-line description of the cost for dumps and logs. */
    String describe();

    /** PBKDF2-HMAC (the only KDF of LUKS1, one of three in LUKS2). */
    record Pbkdf2(LuksHash hash, int iterations) implements Kdf {
        public Pbkdf2 {
            if (hash == null) {
                throw new IllegalArgumentException("PBKDF2 needs a hash");
            }
            if (iterations < 1) {
                throw new IllegalArgumentException("PBKDF2 iterations must be at least 1, got " + iterations);
            }
        }

        @Override
        public byte[] derive(byte[] passphrase, byte[] salt, int length) {
            return hash.pbkdf2(passphrase, salt, iterations, length);
        }

        @Override
        public String typeName() {
            return "pbkdf2";
        }

        @Override
        public String describe() {
            return "pbkdf2 " + hash.luksName() + ", " + iterations + " iterations";
        }
    }

    /**
     * Argon2 version 1.3 (RFC 9106), as LUKS2 stores it: {@code time} passes over {@code memoryKiB} KiB with
     * {@code parallelism} lanes ({@code cpus} in the header).
     */
    record Argon2(boolean idVariant, int time, int memoryKiB, int parallelism) implements Kdf {
        public Argon2 {
            if (time < 1 || parallelism < 1 || parallelism > 0xFFFFFF) {
                throw new IllegalArgumentException("Argon2 time (" + time + ") and parallelism (" + parallelism
                        + ") must be at least 1");
            }
            if (memoryKiB < 8 * parallelism) {
                throw new IllegalArgumentException("Argon2 memory " + memoryKiB + " KiB is below the minimum of 8 KiB per lane ("
                        + 8 * parallelism + " KiB for " + parallelism + " lanes)");
            }
        }

        /** Argon2id with the given cost. */
        public static Argon2 id(int time, int memoryKiB, int parallelism) {
            return new Argon2(true, time, memoryKiB, parallelism);
        }

        @Override
        public byte[] derive(byte[] passphrase, byte[] salt, int length) {
            Argon2Parameters parameters = new Argon2Parameters.Builder(
                    idVariant ? Argon2Parameters.ARGON2_id : Argon2Parameters.ARGON2_i)
                    .withVersion(Argon2Parameters.ARGON2_VERSION_13)
                    .withIterations(time)
                    .withMemoryAsKB(memoryKiB)
                    .withParallelism(parallelism)
                    .withSalt(salt)
                    .build();
            Argon2BytesGenerator generator = new Argon2BytesGenerator();
            generator.init(parameters);
            byte[] out = new byte[length];
            generator.generateBytes(passphrase, out);
            parameters.clear();
            return out;
        }

        @Override
        public String typeName() {
            return idVariant ? "argon2id" : "argon2i";
        }

        @Override
        public String describe() {
            return typeName() + ", time " + time + ", memory " + memoryKiB + " KiB, " + parallelism + " threads";
        }
    }
}
