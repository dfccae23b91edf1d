package io.stripestack.secrets;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Reads a CHAP secret from its file, the one way the server's targets and its remote array members take
 * one: owner-only permissions required, trailing line ends dropped, at least 12 characters (RFC 7143
 * section 12.1.3). The file's bytes are zeroed once decoded; the caller zeroes the returned chars after use.
 * Stateless.
 */
public final class ChapSecretFile {
    /** RFC 7143 12.1.3; libiscsi and open-iscsi accept 12 and more. */
    public static final int MIN_LENGTH = 12;

    private ChapSecretFile() {
    }

    /** The secret; the IOException names the file and the fix, never the secret. */
    public static char[] read(Path file) throws IOException {
        byte[] bytes;
        try {
            FilePermissions.requirePrivate(file, "CHAP secret file",
                    "anyone who can read it can log in as the initiator or impersonate the target");
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new IOException("the CHAP secret file " + file + " does not exist", e);
        }
        int end = bytes.length;
        while (end > 0 && (bytes[end - 1] == '\n' || bytes[end - 1] == '\r')) {
            end--;
        }
        CharBuffer decoded = StandardCharsets.UTF_8.decode(ByteBuffer.wrap(bytes, 0, end));
        char[] secret = Arrays.copyOf(decoded.array(), decoded.limit());
        Arrays.fill(decoded.array(), '\0');
        Arrays.fill(bytes, (byte) 0);
        if (secret.length < MIN_LENGTH) {
            Arrays.fill(secret, '\0');
            throw new IOException("the CHAP secret in " + file + " is too short: CHAP secrets must be at least "
                    + MIN_LENGTH + " characters (RFC 7143 section 12.1.3); write a longer one");
        }
        return secret;
    }
}
