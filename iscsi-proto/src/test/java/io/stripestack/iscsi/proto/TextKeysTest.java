package io.stripestack.iscsi.proto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TextKeysTest {
    private static ByteBuffer text(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void parsesPairsInOrderAndKeepsAPairWithoutEqualsSoItCanBeAnswered() {
        ByteBuffer b = text("InitiatorName=iqn.x\0MaxBurstLength=0x1000\0Lonely\0\0Alias=a=b");
        Map<String, String> keys = TextKeys.parse(b, null);
        assertEquals(List.of("InitiatorName", "MaxBurstLength", "Lonely", "Alias"), List.copyOf(keys.keySet()));
        assertEquals("", keys.get("Lonely"));
        assertEquals("a=b", keys.get("Alias"), "only the first = splits");
        assertEquals(0, b.position(), "the position is left as it was");
    }

    @Test
    void reportsEveryRepeatedKeyAndKeepsItsLastValue() {
        Set<String> repeated = new HashSet<>();
        Map<String, String> keys = TextKeys.parse(text("A=1\0B=2\0A=3\0C=4\0B=5\0"), repeated);
        assertEquals(Set.of("A", "B"), repeated);
        assertEquals("3", keys.get("A"));
    }

    @Test
    void holdsKeysAndValuesToTheirLengths() {
        assertTrue(TextKeys.withinLengths("k".repeat(63), "v".repeat(255)));
        assertFalse(TextKeys.withinLengths("k".repeat(64), "v"));
        assertFalse(TextKeys.withinLengths("MaxBurstLength", "v".repeat(256)));
        assertFalse(TextKeys.withinLengths("InitiatorAlias", "é".repeat(128)), "bytes, not characters");
        String longestChallenge = "0x" + "ab".repeat(1024);
        assertTrue(TextKeys.withinLengths("CHAP_C", longestChallenge), "binary values may be 1024 bytes");
        assertTrue(TextKeys.withinLengths("CHAP_R", longestChallenge));
        assertFalse(TextKeys.withinLengths("CHAP_R", longestChallenge + "a"));
        assertFalse(TextKeys.withinLengths("CHAP_N", longestChallenge), "a name is no binary value");
    }

    @Test
    void encodesWhatItParses() {
        Map<String, String> pairs = new LinkedHashMap<>();
        pairs.put("TargetAlias", "grüße");
        pairs.put("MaxRecvDataSegmentLength", "262144");
        byte[] encoded = TextKeys.encode(pairs);
        assertArrayEquals("TargetAlias=grüße\0MaxRecvDataSegmentLength=262144\0".getBytes(StandardCharsets.UTF_8),
                encoded);
        assertEquals(encoded.length, TextKeys.encodedLength(pairs));
        assertEquals(pairs, TextKeys.parse(ByteBuffer.wrap(encoded), null));
    }

    @Test
    void numbersAreDecimalOrHex() {
        assertEquals(4096, TextKeys.parseNumber("0x1000"));
        assertEquals(4096, TextKeys.parseNumber("4096"));
        assertEquals(-1, TextKeys.parseNumber("0x"));
        assertEquals(-1, TextKeys.parseNumber("many"));
    }
}
