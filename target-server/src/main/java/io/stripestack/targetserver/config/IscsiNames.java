package io.stripestack.targetserver.config;

import java.util.regex.Pattern;

/** What an iSCSI name (RFC 7143 section 4.2.7) looks like, for targets and initiators alike. Stateless. */
public final class IscsiNames {
    private static final Pattern NAME = Pattern.compile(
            "(iqn\\.\\d{4}-\\d{2}\\.[^\\s:]+(:[^\\s]+)?|eui\\.[0-9A-Fa-f]{16}|naa\\.[0-9A-Fa-f]{16,32})");

    private IscsiNames() {
    }

    public static boolean valid(String name) {
        return name != null && NAME.matcher(name).matches();
    }

    /** IllegalArgumentException naming {@code what} and the expected form unless {@code name} is valid. */
    public static String require(String name, String what) {
        if (!valid(name)) {
            throw new IllegalArgumentException(what + " '" + name + "' is not an iSCSI name"
                    + " (iqn.YYYY-MM.reversed.domain[:name], eui.<16 hex> or naa.<16-32 hex>)");
        }
        return name;
    }
}
