package io.stripestack.blockdev;

import java.util.Locale;

/** Byte sizes as users write them: {@code 512K}, {@code 64KiB}, {@code 256MiB}, {@code 1G}; all binary units. */
public final class Sizes {
    private Sizes() {
    }

    public static long parse(String text) {
        String t = text.trim().toUpperCase(Locale.ROOT).replace(" ", "");
        int i = 0;
        while (i < t.length() && Character.isDigit(t.charAt(i))) {
            i++;
        }
        if (i == 0) {
            throw new IllegalArgumentException("'" + text + "' is not a size (examples: 4096, 64KiB, 256M, 1GiB)");
        }
        long number = Long.parseLong(t.substring(0, i));
        String unit = t.substring(i);
        long multiplier;
        switch (unit) {
            case "": case "B": multiplier = 1; break;
            case "K": case "KB": case "KIB": multiplier = 1L << 10; break;
            case "M": case "MB": case "MIB": multiplier = 1L << 20; break;
            case "G": case "GB": case "GIB": multiplier = 1L << 30; break;
            case "T": case "TB": case "TIB": multiplier = 1L << 40; break;
            default: throw new IllegalArgumentException("unknown size unit '" + unit + "' in '" + text
                    + "' (use K, M, G or T; all are powers of 1024)");
        }
        if (number > Long.MAX_VALUE / multiplier) {
            throw new IllegalArgumentException("'" + text + "' is too large");
        }
        return number * multiplier;
    }

    public static String format(long bytes) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
        int u = 0;
        long v = bytes;
        while (u < units.length - 1 && v >= 1024 && v % 1024 == 0) {
            v /= 1024;
            u++;
        }
        return v + units[u];
    }
}
