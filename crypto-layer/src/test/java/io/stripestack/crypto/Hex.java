package io.stripestack.crypto;

import java.util.HexFormat;

/** Hex helpers for tests. */
final class Hex {
    private Hex() {
    }

    static byte[] decode(String hex) {
        return HexFormat.of().parseHex(hex.replace(" ", ""));
    }

    static String encode(byte[] bytes) {
        return HexFormat.of().formatHex(bytes);
    }
}
