package io.stripestack.secrets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChapSecretFileTest {
    @TempDir
    Path dir;

    private Path secretFile(String contents) throws IOException {
        Path file = FilePermissions.createPrivate(dir.resolve("target.chap"));
        Files.writeString(file, contents, StandardCharsets.UTF_8);
        return file;
    }

    @Test
    void trailingLineEndsAreDroppedAndInnerSpacesKept() throws IOException {
        assertArrayEquals(" twelve chars ok".toCharArray(), ChapSecretFile.read(secretFile(" twelve chars ok\r\n\n")));
    }

    @Test
    void createdFilesAreOwnerOnly() throws IOException {
        Path file = secretFile("a-long-enough-secret");
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    }

    @Test
    void aShortSecretIsRefusedWithoutBeingNamed() throws IOException {
        Path file = secretFile("elevenchars\n");
        IOException e = assertThrows(IOException.class, () -> ChapSecretFile.read(file));
        assertTrue(e.getMessage().contains("at least " + ChapSecretFile.MIN_LENGTH), e.getMessage());
        assertFalse(e.getMessage().contains("elevenchars"), e.getMessage());
    }

    @Test
    void aFileOthersCanReadIsRefusedWithTheFixAndWithoutTheSecret() throws IOException {
        Path file = secretFile("a-long-enough-secret");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        IOException e = assertThrows(IOException.class, () -> ChapSecretFile.read(file));
        assertTrue(e.getMessage().contains("chmod 600 " + file), e.getMessage());
        assertFalse(e.getMessage().contains("a-long-enough-secret"), e.getMessage());
    }

    @Test
    void aMissingFileIsNamed() {
        Path file = dir.resolve("missing.chap");
        IOException e = assertThrows(IOException.class, () -> ChapSecretFile.read(file));
        assertTrue(e.getMessage().contains(file + " does not exist"), e.getMessage());
    }
}
