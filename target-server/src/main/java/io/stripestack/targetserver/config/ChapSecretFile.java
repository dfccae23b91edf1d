package io.stripestack.targetserver.config;

import io.stripestack.blockdev.FilePermissions;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Reads a CHAP secret from its file, for the configuration and for {@code chap set} at run time alike: the file
 * must be readable by its owner only, a trailing newline is not part of the secret, and the secret must have at
 * least 12 characters (RFC 7143 section 12.1.3). The bytes read are zeroed; the caller zeroes the returned chars.
 * Messages name the file, never the secret. Stateless.
 */
public final class ChapSecretFile {
    static final int MIN_SECRET_CHARS = 12;

    private ChapSecretFile() {
    }

    /** The secret in {@code file}; IOException naming the file and the fix when it cannot be used. */
    public static char[] read(Path file) throws IOException {
        byte[] bytes;
        try {
            FilePermissions.requirePrivate(file, "CHAP secret file",
                    "anyone who can read it can log in as the initiator or impersonate the target");
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new IOException("the CHAP secret file " + file + " does not exist", e);
        }
        try {
            int end = bytes.length;
            while (end > 0 && (bytes[end - 1] == '\n' || bytes[end - 1] == '\r')) {
                end--;
            }
            CharBuffer decoded = StandardCharsets.UTF_8.decode(ByteBuffer.wrap(bytes, 0, end));
            char[] secret = new char[decoded.remaining()];
            decoded.get(secret);
            Arrays.fill(decoded.array(), '\0');
            if (secret.length < MIN_SECRET_CHARS) {
                Arrays.fill(secret, '\0');
                throw new IOException("the CHAP secret in " + file + ": CHAP secrets must be at least " + MIN_SECRET_CHARS
                        + " characters (RFC 7143 section 12.1.3)");
            }
            return secret;
        } finally {
            Arrays.fill(bytes, (byte) 0);
        }
    }
}
