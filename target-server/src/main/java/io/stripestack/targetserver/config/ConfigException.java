package io.stripestack.targetserver.config;

/**
 * A configuration that cannot be used: the message names the file, the line, the key and the fix, e.g.
 * {@code conf/x.yaml:12: targets[0].luns[0].crypto.cipher: unknown cipher spec 'aes-foo' (use one of ...)}.
 */
public class ConfigException extends Exception {
    private static final long serialVersionUID = 1L;

    public ConfigException(String message) {
        super(message);
    }

    public ConfigException(String message, Throwable cause) {
        super(message, cause);
    }
}
