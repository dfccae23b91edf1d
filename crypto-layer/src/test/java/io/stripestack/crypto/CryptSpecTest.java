package io.stripestack.crypto;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CryptSpecTest {

    @ParameterizedTest
    @ValueSource(strings = {"aes-cbc-essiv:sha256", "aes-cbc-plain64", "aes-cbc-plain", "aes-cbc-plain64be",
            "aes-xts-plain64", "aes-xts-essiv:sha256", "aes-cbc-essiv:md5"})
    void parsesAndPrintsBack(String spec) {
        assertEquals(spec, CryptSpec.parse(spec).toString());
    }

    @Test
    void parsesComponents() {
        CryptSpec essiv = CryptSpec.parse("AES-CBC-ESSIV:SHA256");
        assertEquals(CryptSpec.Mode.CBC, essiv.mode());
        assertEquals(CryptSpec.IvMode.ESSIV, essiv.ivMode());
        assertEquals("SHA-256", essiv.ivHash());
        assertEquals(essiv, CryptSpec.PLAIN_DEFAULT);
        CryptSpec xts = CryptSpec.parse("aes-xts-plain64");
        assertEquals(CryptSpec.Mode.XTS, xts.mode());
        assertEquals(CryptSpec.IvMode.PLAIN64, xts.ivMode());
        assertNull(xts.ivHash());
        assertEquals(xts, CryptSpec.LUKS2_DEFAULT);
    }

    @ParameterizedTest
    @ValueSource(strings = {"twofish-cbc-plain64", "aes-ecb-plain", "aes-cbc-benbi", "aes-cbc-essiv", "aes-cbc-essiv:sha512",
            "aes-cbc-essiv:nosuchhash", "aes-cbc-plain64:sha256", "aes-cbc", "aes", ""})
    void refusesUnsupportedSpecsNamingThem(String spec) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CryptSpec.parse(spec));
        assertTrue(e.getMessage().contains("'" + spec + "'"), e.getMessage());
    }

    @Test
    void checksKeyLengthsPerMode() {
        CryptSpec cbc = CryptSpec.parse("aes-cbc-plain64");
        CryptSpec xts = CryptSpec.parse("aes-xts-plain64");
        cbc.checkKeyLength(16);
        cbc.checkKeyLength(32);
        xts.checkKeyLength(32);
        xts.checkKeyLength(64);
        assertThrows(IllegalArgumentException.class, () -> cbc.checkKeyLength(64));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> xts.checkKeyLength(16));
        assertTrue(e.getMessage().contains("512"), e.getMessage());
    }
}
