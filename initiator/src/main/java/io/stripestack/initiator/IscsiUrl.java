package io.stripestack.initiator;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/**
 * A libiscsi-style URL: {@code iscsi://[USER[%SECRET]@]HOST[:PORT]/TARGET-IQN/LUN}, the form iscsi-ls,
 * qemu and fio accept. The CHAP secret, when present, is kept as a char array the caller zeroes
 * ({@link #clearSecret()}); {@link #toString()} never shows it.
 */
public record IscsiUrl(String host, int port, String targetIqn, int lun, String chapUser, char[] chapSecret) {
    public static final int DEFAULT_PORT = 3260;

    public static IscsiUrl parse(String url) {
        String usage = " (expected iscsi://[USER%SECRET@]HOST[:PORT]/TARGET-IQN/LUN, e.g. "
                + "iscsi://127.0.0.1:3260/iqn.2026-11.io.stripestack:default/0)";
        if (!url.startsWith("iscsi://")) {
            throw new IllegalArgumentException("'" + redact(url) + "' is not an iscsi:// URL" + usage);
        }
        String rest = url.substring("iscsi://".length());
        String user = null;
        char[] secret = null;
        int at = rest.lastIndexOf('@');
        if (at >= 0) {
            String credentials = rest.substring(0, at);
            rest = rest.substring(at + 1);
            int percent = credentials.indexOf('%');
            user = URLDecoder.decode(percent < 0 ? credentials : credentials.substring(0, percent), StandardCharsets.UTF_8);
            if (percent >= 0) {
                secret = credentials.substring(percent + 1).toCharArray();
            }
        }
        int slash = rest.indexOf('/');
        int lastSlash = rest.lastIndexOf('/');
        if (slash < 0 || lastSlash == slash) {
            throw new IllegalArgumentException("'" + redact(url) + "' lacks the target name or the LUN" + usage);
        }
        String hostPort = rest.substring(0, slash);
        String iqn = rest.substring(slash + 1, lastSlash);
        int lun;
        try {
            lun = Integer.parseInt(rest.substring(lastSlash + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + redact(url) + "': the LUN '" + rest.substring(lastSlash + 1)
                    + "' is not a number" + usage);
        }
        String host = hostPort;
        int port = DEFAULT_PORT;
        int colon = hostPort.lastIndexOf(':');
        if (hostPort.startsWith("[")) {
            int close = hostPort.indexOf(']');
            host = hostPort.substring(1, close);
            if (close + 1 < hostPort.length()) {
                port = Integer.parseInt(hostPort.substring(close + 2));
            }
        } else if (colon >= 0) {
            host = hostPort.substring(0, colon);
            port = Integer.parseInt(hostPort.substring(colon + 1));
        }
        return new IscsiUrl(host, port, iqn, lun, user, secret);
    }

    private static String redact(String url) {
        int at = url.lastIndexOf('@');
        int percent = url.indexOf('%');
        return at > 0 && percent > 0 && percent < at ? url.substring(0, percent) + "%***" + url.substring(at) : url;
    }

    public void clearSecret() {
        if (chapSecret != null) {
            java.util.Arrays.fill(chapSecret, '\0');
        }
    }

    @Override
    public String toString() {
        return "iscsi://" + (chapUser == null ? "" : chapUser + "@") + (host.contains(":") ? "[" + host + "]" : host)
                + ":" + port + "/" + targetIqn + "/" + lun;
    }
}
