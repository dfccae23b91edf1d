package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The key=value text format of login and text PDUs (RFC 7143 section 6.1): UTF-8 pairs, each
 * terminated by a NUL byte. Login and text negotiation only, never on the I/O path.
 */
final class TextParameters {
    private TextParameters() {
    }

    /**
     * Parses pairs in order of appearance. A pair without '=' is kept with an empty value so the
     * negotiator can answer it; a key repeated keeps its last value.
     */
    static Map<String, String> parse(ByteBuf data) {
        return parse(data, null);
    }

    /** As {@link #parse(ByteBuf)}, adding every key that appears more than once to {@code repeated}. */
    static Map<String, String> parse(ByteBuf data, Set<String> repeated) {
        Map<String, String> pairs = new LinkedHashMap<>();
        int index = data.readerIndex();
        int end = data.writerIndex();
        while (index < end) {
            int nul = data.indexOf(index, end, (byte) 0);
            int pairEnd = nul < 0 ? end : nul;
            if (pairEnd > index) {
                String pair = data.toString(index, pairEnd - index, StandardCharsets.UTF_8);
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

    /** The bytes {@link #write} produces for {@code pairs}. */
    static int encodedLength(Map<String, String> pairs) {
        int length = 0;
        for (Map.Entry<String, String> e : pairs.entrySet()) {
            length += e.getKey().getBytes(StandardCharsets.UTF_8).length + 1
                    + e.getValue().getBytes(StandardCharsets.UTF_8).length + 1;
        }
        return length;
    }

    /** Appends the pairs, each NUL-terminated, to {@code out}. */
    static void write(Map<String, String> pairs, ByteBuf out) {
        for (Map.Entry<String, String> e : pairs.entrySet()) {
            out.writeCharSequence(e.getKey(), StandardCharsets.UTF_8);
            out.writeByte('=');
            out.writeCharSequence(e.getValue(), StandardCharsets.UTF_8);
            out.writeByte(0);
        }
    }

    /** Parses a numerical value: decimal, or hex with a 0x prefix; -1 if it is neither. */
    static long parseNumber(String value) {
        try {
            if (value.startsWith("0x") || value.startsWith("0X")) {
                return Long.parseLong(value.substring(2), 16);
            }
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
