package io.stripestack.iscsi.proto;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The key=value text of Login and Text PDUs (RFC 7143 section 6.1): UTF-8 pairs, each terminated by a NUL byte,
 * and the bounds a receiver holds them to. Login and text negotiation only, never on the I/O path, so it builds
 * Strings freely. Stateless.
 */
public final class TextKeys {
    /** RFC 7143 section 6.1: key names are at most 63 bytes. */
    public static final int MAX_KEY_BYTES = 63;
    /** RFC 7143 section 6.1: simple values are at most 255 bytes. */
    public static final int MAX_VALUE_BYTES = 255;
    /** Binary values (CHAP challenges and responses) are 1024 bytes at most, here hex-encoded with their 0x. */
    public static final int MAX_BINARY_VALUE_BYTES = 2 + 2 * 1024;
    /** The whole text of one login request, all its PDUs together. */
    public static final int MAX_LOGIN_TEXT_BYTES = 64 * 1024;
    /** RFC 7143 section 4.2.7.1: an iSCSI name is at most 223 bytes. */
    public static final int MAX_NAME_BYTES = 223;

    private TextKeys() {
    }

    /**
     * Parses the pairs from {@code text}'s position to its limit, in order of appearance; the position is left as
     * it was. A pair without '=' is kept with an empty value so that it can be answered; a key repeated keeps its
     * last value and, when {@code repeated} is not null, is added to it.
     */
    public static Map<String, String> parse(ByteBuffer text, Set<String> repeated) {
        Map<String, String> pairs = new LinkedHashMap<>();
        int index = text.position();
        int end = text.limit();
        while (index < end) {
            int pairEnd = index;
            while (pairEnd < end && text.get(pairEnd) != 0) {
                pairEnd++;
            }
            if (pairEnd > index) {
                byte[] bytes = new byte[pairEnd - index];
                text.get(index, bytes);
                String pair = new String(bytes, StandardCharsets.UTF_8);
                int eq = pair.indexOf('=');
                String key = eq < 0 ? pair : pair.substring(0, eq);
                if (pairs.put(key, eq < 0 ? "" : pair.substring(eq + 1)) != null && repeated != null) {
                    repeated.add(key);
                }
            }
            index = pairEnd + 1;
        }
        return pairs;
    }

    /**
     * Whether a pair keeps to RFC 7143 section 6.1's lengths: a key of at most {@link #MAX_KEY_BYTES}, a value of
     * at most {@link #MAX_VALUE_BYTES}, or {@link #MAX_BINARY_VALUE_BYTES} for the keys that carry binary values.
     */
    public static boolean withinLengths(String key, String value) {
        LoginKey known = LoginKey.byName(key);
        int valueLimit = known != null && known.has(LoginKey.Trait.BINARY) ? MAX_BINARY_VALUE_BYTES : MAX_VALUE_BYTES;
        return utf8Length(key) <= MAX_KEY_BYTES && utf8Length(value) <= valueLimit;
    }

    /** The bytes {@link #encode} produces for {@code pairs}. */
    public static int encodedLength(Map<String, String> pairs) {
        int length = 0;
        for (Map.Entry<String, String> e : pairs.entrySet()) {
            length += utf8Length(e.getKey()) + 1 + utf8Length(e.getValue()) + 1;
        }
        return length;
    }

    /** The pairs as key=value, each NUL-terminated, in the map's order. */
    public static byte[] encode(Map<String, String> pairs) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(encodedLength(pairs));
        for (Map.Entry<String, String> e : pairs.entrySet()) {
            out.writeBytes(e.getKey().getBytes(StandardCharsets.UTF_8));
            out.write('=');
            out.writeBytes(e.getValue().getBytes(StandardCharsets.UTF_8));
            out.write(0);
        }
        return out.toByteArray();
    }

    /** A numerical value (RFC 7143 section 6.1): decimal, or hex with a 0x prefix; -1 if it is neither. */
    public static long parseNumber(String value) {
        try {
            if (value.startsWith("0x") || value.startsWith("0X")) {
                return Long.parseLong(value.substring(2), 16);
            }
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    public static int utf8Length(String text) {
        return text.getBytes(StandardCharsets.UTF_8).length;
    }
}
