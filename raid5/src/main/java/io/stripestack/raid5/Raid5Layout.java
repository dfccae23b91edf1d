package io.stripestack.raid5;

import java.util.Locale;

/**
 * The four RAID-5 parity layouts of Linux md (drivers/md/raid5.c, ALGORITHM_* numbers as stored in the
 * superblock's {@code layout} field). For stripe row {@code r} of an array of {@code n} members, the
 * layout decides which member holds parity and which member holds data chunk {@code i} ({@code 0 <= i < n-1}).
 *
 * <p>Immutable; safe from any thread.
 */
public enum Raid5Layout {
    /** md algorithm 0: parity walks down from the last member, data fills the other members in order. */
    LEFT_ASYMMETRIC(0, "left-asymmetric", true, false),
    /** md algorithm 1: parity walks up from the first member, data fills the other members in order. */
    RIGHT_ASYMMETRIC(1, "right-asymmetric", false, false),
    /** md algorithm 2 (mdadm's default): parity walks down, data starts on the member after parity. */
    LEFT_SYMMETRIC(2, "left-symmetric", true, true),
    /** md algorithm 3: parity walks up, data starts on the member after parity. */
    RIGHT_SYMMETRIC(3, "right-symmetric", false, true);

    private final int mdNumber;
    private final String mdName;
    private final boolean parityWalksDown;
    private final boolean dataFollowsParity;

    Raid5Layout(int mdNumber, String mdName, boolean parityWalksDown, boolean dataFollowsParity) {
        this.mdNumber = mdNumber;
        this.mdName = mdName;
        this.parityWalksDown = parityWalksDown;
        this.dataFollowsParity = dataFollowsParity;
    }

    /** The value stored in the md superblock's layout field. */
    public int mdNumber() {
        return mdNumber;
    }

    /** The name mdadm prints and accepts ({@code --layout=left-symmetric}). */
    public String mdName() {
        return mdName;
    }

    /** Member index holding parity in stripe row {@code row} of an {@code members}-member array. */
    public int parityMember(long row, int members) {
        int rotation = (int) (row % members);
        return parityWalksDown ? members - 1 - rotation : rotation;
    }

    /** Member index holding data chunk {@code dataIndex} (0-based, {@code < members - 1}) of row {@code row}. */
    public int dataMember(long row, int dataIndex, int members) {
        int parity = parityMember(row, members);
        if (dataFollowsParity) {
            int member = parity + 1 + dataIndex;
            return member >= members ? member - members : member;
        }
        return dataIndex < parity ? dataIndex : dataIndex + 1;
    }

    /** The data chunk index stored on {@code member} in row {@code row}, or -1 if it holds the parity. */
    public int dataIndexOf(long row, int member, int members) {
        int parity = parityMember(row, members);
        if (member == parity) {
            return -1;
        }
        if (dataFollowsParity) {
            int index = member - parity - 1;
            return index < 0 ? index + members : index;
        }
        return member < parity ? member : member - 1;
    }

    /** The layout with that md number; the error names the accepted values. */
    public static Raid5Layout fromMdNumber(int number) {
        for (Raid5Layout layout : values()) {
            if (layout.mdNumber == number) {
                return layout;
            }
        }
        throw new IllegalArgumentException("md RAID-5 layout " + number
                + " is not supported; use 0-3 (left-asymmetric, right-asymmetric, left-symmetric, right-symmetric)");
    }

    /** Parses an mdadm layout name ({@code left-symmetric}, also {@code ls}, {@code la}, {@code rs}, {@code ra}). */
    public static Raid5Layout parse(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT).replace('_', '-');
        for (Raid5Layout layout : values()) {
            String shortName = layout.mdName.charAt(0) + "" + layout.mdName.charAt(layout.mdName.indexOf('-') + 1);
            if (layout.mdName.equals(n) || shortName.equals(n)) {
                return layout;
            }
        }
        throw new IllegalArgumentException("unknown RAID-5 layout '" + name
                + "'; use left-symmetric (default), right-symmetric, left-asymmetric or right-asymmetric");
    }
}
