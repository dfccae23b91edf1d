package io.stripestack.iscsi.proto;

/**
 * The result functions of RFC 7143 section 6.2 over {@link LoginKey}'s table: what a responder answers to an
 * offer, and what an offering side takes as in force from the answer. Both sides resolve every negotiated value
 * here; each brings only its own value (its policy and limits). Stateless.
 */
public final class KeyNegotiation {
    public static final String REJECT = "Reject";
    public static final String NOT_UNDERSTOOD = "NotUnderstood";
    public static final String IRRELEVANT = "Irrelevant";
    public static final String YES = "Yes";
    public static final String NO = "No";

    /** Whether a received key is one to negotiate, and if not, why not. */
    public enum Verdict {
        /** Known, from a side that may send it, where it may be used: negotiate it. */
        NEGOTIATE,
        /** Not in the table. */
        UNKNOWN,
        /** The other side may not send this key (a target's declaration offered by an initiator). */
        WRONG_SENDER,
        /** Not usable where it came: a security key outside the security stage, a full feature key in a login. */
        WRONG_PHASE,
        /** A key a discovery session ignores. */
        IRRELEVANT
    }

    private KeyNegotiation() {
    }

    /**
     * The table's rules for key {@code name} received from {@code sender} in {@code phase}, on a session's leading
     * connection or another, in a discovery session or a normal one. The checks go in this order: known, sender,
     * phase, relevance.
     */
    public static Verdict check(String name, LoginKey.Sender sender, LoginKey.Phase phase, boolean leadingConnection,
            boolean discovery) {
        LoginKey key = LoginKey.byName(name);
        if (key == null) {
            return Verdict.UNKNOWN;
        }
        if (!key.sendableBy(sender)) {
            return Verdict.WRONG_SENDER;
        }
        if (!key.usableIn(phase, leadingConnection)) {
            return Verdict.WRONG_PHASE;
        }
        if (discovery && key.has(LoginKey.Trait.NORMAL_SESSION_ONLY)) {
            return Verdict.IRRELEVANT;
        }
        return Verdict.NEGOTIATE;
    }

    /**
     * The responder's answer to {@code offered} given its own value {@code ours}, by the key's result function: for
     * a list, the first offered value that {@code ours} (itself a list) also names; for a number, the smaller or
     * larger of the two; for Yes/No, the AND or the OR. Null when the offer is no valid value of the key (a number
     * out of the key's range, anything but Yes or No) or a list has nothing in common: the responder answers
     * {@link #REJECT}. A declarative key has no result function: the offer is returned when it is valid.
     */
    public static String resolve(LoginKey key, String offered, String ours) {
        if (!valid(key, offered)) {
            return null;
        }
        return switch (key.kind()) {
            case LIST -> firstCommon(offered, ours);
            case NUMERIC_MIN -> Long.toString(Math.min(TextKeys.parseNumber(offered), TextKeys.parseNumber(ours)));
            case NUMERIC_MAX -> Long.toString(Math.max(TextKeys.parseNumber(offered), TextKeys.parseNumber(ours)));
            case BOOLEAN_AND -> yesNo(YES.equals(offered) && YES.equals(ours));
            case BOOLEAN_OR -> yesNo(YES.equals(offered) || YES.equals(ours));
            case DECLARATIVE -> offered;
        };
    }

    /**
     * What an offering side takes as in force once the responder answered: the result function over its own
     * offer and the answer, where a missing or unusable answer (none, Reject, NotUnderstood, Irrelevant, a value
     * out of range) counts as the key's default. Null when even that leaves no value (a list answered with
     * nothing the offer named), which the offering side must refuse.
     */
    public static String inForce(LoginKey key, String ours, String answer) {
        String effective = answer != null && valid(key, answer) ? answer : key.defaultValue();
        if (effective == null) {
            return null;
        }
        if (key.kind() == LoginKey.Kind.DECLARATIVE) {
            return effective;
        }
        // the answer resolved against our offer: for a list it must be one of the values we offered
        return resolve(key, effective, ours);
    }

    /**
     * Whether {@code value} is a valid value of {@code key}: a number within the key's range (decimal or 0x hex),
     * Yes or No for a boolean, any value otherwise (a list's members are each side's business).
     */
    public static boolean valid(LoginKey key, String value) {
        if (value == null) {
            return false;
        }
        if (key.numeric()) {
            long n = TextKeys.parseNumber(value);
            return n >= key.min() && n <= key.max();
        }
        return switch (key.kind()) {
            case BOOLEAN_AND, BOOLEAN_OR -> YES.equals(value) || NO.equals(value);
            default -> true;
        };
    }

    /** The number of a valid numeric value; -1 when it is not one. */
    public static long number(LoginKey key, String value) {
        return valid(key, value) && key.numeric() ? TextKeys.parseNumber(value) : -1;
    }

    public static String yesNo(boolean b) {
        return b ? YES : NO;
    }

    private static String firstCommon(String offered, String ours) {
        for (String candidate : offered.split(",")) {
            for (String supported : ours.split(",")) {
                if (candidate.equals(supported)) {
                    return candidate;
                }
            }
        }
        return null;
    }
}
