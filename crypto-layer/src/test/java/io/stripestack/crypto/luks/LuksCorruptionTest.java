package io.stripestack.crypto.luks;

import static io.stripestack.crypto.luks.LuksTestSupport.bytes;
import static io.stripestack.crypto.luks.LuksTestSupport.cheap;
import static io.stripestack.crypto.luks.LuksTestSupport.editLuks2Json;
import static io.stripestack.crypto.luks.LuksTestSupport.flip;
import static io.stripestack.crypto.luks.LuksTestSupport.memory;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Damaged headers are refused with a message naming the damage; nothing crashes and nothing ever opens with a
 * wrong key. JSON damage is also tested with checksums recomputed, so the JSON checks themselves are reached.
 */
class LuksCorruptionTest {
    private static final byte[] PASS = bytes("pass");
    private static final int HDR = 16384;

    private static byte[] volumeKey(int length) {
        byte[] key = new byte[length];
        new Random(42).nextBytes(key);
        return key;
    }

    private static MemoryBlockDevice luks2() throws IOException {
        MemoryBlockDevice device = memory(20);
        LuksFormatter.format(device, cheap(LuksFormatOptions.luks2()).withKdf(LuksTestSupport.CHEAP_PBKDF2), PASS, volumeKey(64));
        return device;
    }

    private static MemoryBlockDevice luks1() throws IOException {
        MemoryBlockDevice device = memory(4);
        LuksFormatter.format(device, cheap(LuksFormatOptions.luks1()).withCipher("aes-xts-plain64", 256).withAlignPayload(8),
                PASS, volumeKey(32));
        return device;
    }

    private static String refusal(MemoryBlockDevice device) {
        return assertThrows(LuksHeaderException.class, () -> LuksHeader.read(device)).getMessage();
    }

    private static void assertMentions(String message, String... parts) {
        for (String part : parts) {
            assertTrue(message.contains(part), "expected '" + part + "' in: " + message);
        }
    }

    @Test
    void luks2BadMagicChecksumAndJsonBytesAreRefused() throws IOException {
        MemoryBlockDevice device = luks2();
        flip(device, 1, 0x01);
        assertMentions(refusal(device), "primary LUKS2 header at byte 0 is damaged", "secondary copy exists at byte 16384",
                "cryptsetup repair");
        flip(device, HDR + 1, 0x01);
        assertMentions(refusal(device), "no LUKS header", "header backup");
        flip(device, HDR + 1, 0x01);
        flip(device, 1, 0x01);

        flip(device, HDR + 2, 0x20);
        assertMentions(refusal(device), "secondary copy", "bad magic");
        flip(device, HDR + 2, 0x20);

        flip(device, 448, 0xff);
        assertMentions(refusal(device), "primary copy", "checksum mismatch");
        flip(device, 448, 0xff);

        flip(device, 4096 + 20, 0x04);
        assertMentions(refusal(device), "checksum mismatch");
        flip(device, 4096 + 20, 0x04);

        flip(device, 16, 0x01); // seqid of the primary only
        assertMentions(refusal(device), "checksum mismatch");
        flip(device, 16, 0x01);
        LuksHeader.read(device).unlock(PASS, "pass").close();
    }

    @Test
    void luks2MalformedJsonWithValidChecksumsIsRefused() throws IOException {
        MemoryBlockDevice device = luks2();
        editLuks2Json(device, json -> json.substring(0, json.length() / 2));
        assertMentions(refusal(device), "JSON", "corrupt");

        device = luks2();
        editLuks2Json(device, json -> json.replace("\"keyslots\":{\"0\"", "\"keyslots\":{\"0\":1,\"0\""));
        assertMentions(refusal(device), "malformed JSON");

        device = luks2();
        editLuks2Json(device, json -> json.replace("\"segments\"", "\"segmentz\""));
        assertMentions(refusal(device), "object 'segments' is missing");
    }

    @Test
    void luks2InconsistentOffsetsAreRefused() throws IOException {
        MemoryBlockDevice device = luks2();
        editLuks2Json(device, json -> json.replace("\"offset\":\"16777216\"", "\"offset\":\"1048576\""));
        assertMentions(refusal(device), "keyslots area ends at byte 16777216, beyond the data offset 1048576");

        device = luks2();
        editLuks2Json(device, json -> json.replace("\"offset\":\"32768\"", "\"offset\":\"16760832\""));
        assertMentions(refusal(device), "keyslots.0.area", "inside the keyslots area");

        device = luks2();
        editLuks2Json(device, json -> json.replace("\"json_size\":\"12288\"", "\"json_size\":\"8192\""));
        assertMentions(refusal(device), "json_size");

        device = luks2();
        editLuks2Json(device, json -> json.replace("\"stripes\":4000", "\"stripes\":4"));
        assertMentions(refusal(device), "stripes");
    }

    @Test
    void argon2CostBeyondTheHeapIsRefusedNotAttempted() throws IOException {
        MemoryBlockDevice device = memory(20);
        LuksFormatter.format(device, cheap(LuksFormatOptions.luks2()), PASS, volumeKey(64));
        editLuks2Json(device, json -> json.replace("\"memory\":32,", "\"memory\":4194304,"));
        LuksHeader header = LuksHeader.read(device);
        LuksHeaderException e = assertThrows(LuksHeaderException.class, () -> header.unlock(PASS, "pass"));
        assertMentions(e.getMessage(), "keyslot 0 needs 4096 MiB", "-Xmx");
    }

    @Test
    void damagedKeyMaterialOrDigestNeverYieldsAKey() throws IOException {
        MemoryBlockDevice device = luks2();
        flip(device, 2 * HDR + 1000, 0x10);
        assertThrows(LuksPassphraseException.class, () -> LuksHeader.read(device).unlock(PASS, "pass"));

        MemoryBlockDevice old = luks1();
        flip(old, 8 * 512 + 77, 0x80); // keyslot 0's key material
        assertThrows(LuksPassphraseException.class, () -> LuksHeader.read(old).unlock(PASS, "pass"));

        MemoryBlockDevice digest = luks1();
        flip(digest, 112, 0x01); // mk-digest
        assertThrows(LuksPassphraseException.class, () -> LuksHeader.read(digest).unlock(PASS, "pass"));
    }

    @Test
    void luks1FieldDamageIsRefusedByName() throws IOException {
        MemoryBlockDevice device = luks1();
        flip(device, 208, 0x01); // keyslot 0 state
        assertMentions(refusal(device), "keyslot 0", "neither enabled nor disabled");

        device = luks1();
        flip(device, 8, 0x03); // "aes" -> "bes"
        assertMentions(refusal(device), "unsupported cipher");

        device = luks1();
        flip(device, 208 + 48 * 3 + 40, 0x40); // keyslot 3 material offset far beyond the payload
        assertMentions(refusal(device), "keyslot 3", "payload");

        device = luks1();
        flip(device, 208 + 48 * 2 + 43, 0x08); // keyslot 2 moved by 8 sectors onto keyslot 3
        assertMentions(refusal(device), "overlap");
    }

    /** Every single-byte flip in either header version ends in a refusal or the right key, nothing else. */
    @Test
    void randomByteFlipsEndInARefusalOrTheRightKey() throws IOException {
        Random random = new Random(7);
        for (int version = 1; version <= 2; version++) {
            MemoryBlockDevice device = version == 1 ? luks1() : luks2();
            int headerBytes = version == 1 ? Luks1Header.PHDR_BYTES : 2 * HDR;
            byte[] expected = volumeKey(version == 1 ? 32 : 64);
            for (int round = 0; round < 60; round++) {
                int offset = random.nextInt(headerBytes);
                int mask = 1 << random.nextInt(8);
                flip(device, offset, mask);
                try {
                    LuksHeader header = LuksHeader.read(device);
                    try (VolumeKey key = header.unlock(PASS, "pass")) {
                        assertArrayEquals(expected, key.bytes(), "LUKS" + version + " flip at " + offset);
                    }
                } catch (LuksHeaderException | LuksPassphraseException expectedRefusal) {
                    // refused cleanly
                } catch (RuntimeException e) {
                    fail("LUKS" + version + " flip of bit " + mask + " at byte " + offset + " crashed", e);
                }
                flip(device, offset, mask);
            }
        }
    }

    /**
     * Valid-checksum JSON with one member removed or replaced by a value of the wrong type or range: refused
     * (or, for members that do not matter, opened to the right key), never a crash.
     */
    @Test
    void mutatedJsonMembersEndInARefusalOrTheRightKey() throws Exception {
        MemoryBlockDevice pristine = luks2();
        byte[] image = LuksIo.read(pristine, 0, 2 * HDR);
        String json = jsonOf(pristine);
        Random random = new Random(9);
        Object[] replacements = {"x", -1, 0, 1L << 40, "99999999999999999", "-5", new java.util.LinkedHashMap<>(),
                new java.util.ArrayList<>(), true, "sha1", "aes-cbc-plain"};
        for (int round = 0; round < 100; round++) {
            java.util.Map<String, Object> tree = LuksJson.parseObject(json, "test");
            java.util.Map<String, Object> parent = tree;
            String key = null;
            while (true) { // walk down to a random member
                java.util.List<String> keys = new java.util.ArrayList<>(parent.keySet());
                if (keys.isEmpty()) {
                    break;
                }
                key = keys.get(random.nextInt(keys.size()));
                if (parent.get(key) instanceof java.util.Map<?, ?> child && !child.isEmpty() && random.nextInt(4) != 0) {
                    @SuppressWarnings("unchecked")
                    java.util.Map<String, Object> next = (java.util.Map<String, Object>) child;
                    parent = next;
                } else {
                    break;
                }
            }
            if (key == null) {
                continue;
            }
            String mutation;
            if (random.nextInt(4) == 0) {
                parent.remove(key);
                mutation = "removed " + key;
            } else {
                Object value = replacements[random.nextInt(replacements.length)];
                parent.put(key, value);
                mutation = key + " = " + value;
            }
            LuksIo.write(pristine, 0, image);
            String mutated = LuksJson.write(tree);
            editLuks2Json(pristine, text -> mutated);
            try {
                try (VolumeKey key64 = LuksHeader.read(pristine).unlock(PASS, "pass")) {
                    assertArrayEquals(volumeKey(64), key64.bytes(), mutation);
                }
            } catch (LuksHeaderException | LuksPassphraseException refused) {
                // refused cleanly
            } catch (RuntimeException e) {
                fail("JSON mutation '" + mutation + "' crashed", e);
            }
        }
    }

    private static String jsonOf(MemoryBlockDevice device) throws IOException {
        byte[] copy = LuksIo.read(device, 0, HDR);
        int end = 4096;
        while (copy[end] != 0) {
            end++;
        }
        return new String(copy, 4096, end - 4096, StandardCharsets.UTF_8);
    }
}
