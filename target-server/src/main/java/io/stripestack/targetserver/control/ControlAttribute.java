package io.stripestack.targetserver.control;

/**
 * One runtime setting or action, like a sysfs file: {@code md0/stripe_cache_size},
 * {@code iqn.2026-11.io.stripestack:default/lun0/read_ahead_kb}, {@code md0/sync_action}.
 *
 * <p>Setters validate and throw {@link IllegalArgumentException} whose message gives the valid range;
 * the message is sent to the operator as it is.
 */
public interface ControlAttribute {

    String get();

    /** Applies a new value without restart and without interrupting I/O. */
    void set(String value);

    /**
     * Applies a new value as {@link #set} and returns what the operator is told beyond "OK" (a file created, a
     * member re-added); empty for plain settings.
     */
    default String apply(String value) {
        set(value);
        return "";
    }

    default boolean writable() {
        return true;
    }

    /** A read-only attribute. */
    static ControlAttribute readOnly(java.util.function.Supplier<String> getter) {
        return new ControlAttribute() {
            @Override
            public String get() {
                return getter.get();
            }

            @Override
            public void set(String value) {
                throw new IllegalArgumentException("read-only");
            }

            @Override
            public boolean writable() {
                return false;
            }
        };
    }

    /** An integer attribute in {@code [min, max]}. */
    static ControlAttribute ofInt(java.util.function.IntSupplier getter, java.util.function.IntConsumer setter,
            int min, int max) {
        return new ControlAttribute() {
            @Override
            public String get() {
                return Integer.toString(getter.getAsInt());
            }

            @Override
            public void set(String value) {
                setter.accept(parseInt(value, min, max));
            }
        };
    }

    /**
     * A written value as a whole number in {@code [min, max]}; otherwise IllegalArgumentException giving the
     * valid range, which the operator sees as it is.
     */
    static int parseInt(String value, int min, int max) {
        int parsed;
        try {
            parsed = Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + value + "' is not a whole number (valid: " + min + ".." + max + ")");
        }
        if (parsed < min || parsed > max) {
            throw new IllegalArgumentException(parsed + " is out of range (valid: " + min + ".." + max + ")");
        }
        return parsed;
    }

    /** A boolean attribute taking 0/1 like sysfs (also true/false, on/off). */
    static ControlAttribute ofBoolean(java.util.function.BooleanSupplier getter, java.util.function.Consumer<Boolean> setter) {
        return new ControlAttribute() {
            @Override
            public String get() {
                return getter.getAsBoolean() ? "1" : "0";
            }

            @Override
            public void set(String value) {
                switch (value.trim().toLowerCase(java.util.Locale.ROOT)) {
                    case "1": case "true": case "on": case "yes": setter.accept(true); break;
                    case "0": case "false": case "off": case "no": setter.accept(false); break;
                    default: throw new IllegalArgumentException("'" + value + "' is not 0 or 1");
                }
            }
        };
    }
}
