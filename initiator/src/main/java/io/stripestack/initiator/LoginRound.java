package io.stripestack.initiator;

import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.iscsi.proto.TextKeys;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One Login Request and its Login Response at a time (RFC 7143 sections 11.12-11.13), carrying from round to
 * round what the next request needs: the ISID, the StatSN and the CmdSN window the target last announced, and
 * whether the target agreed to move on to the next stage. Used by the login thread alone, before
 * {@code iscsi-reader} starts, so it reads the socket itself; its state needs no lock.
 */
final class LoginRound {
    static final int SECURITY = Bhs.STAGE_SECURITY;
    static final int OPERATIONAL = Bhs.STAGE_OPERATIONAL;
    static final int FULL_FEATURE = Bhs.STAGE_FULL_FEATURE;
    /** The login is the session's only task yet; any tag would do. */
    private static final int LOGIN_ITT = 1;
    /** MaxRecvDataSegmentLength is not negotiated yet during login: every login PDU keeps to its default. */
    private static final int LOGIN_SEGMENT_LIMIT = 8192;

    private final PduChannel pdus;
    private final String description;
    /** Type "random" (0b10 in the top two bits, RFC 7143 section 11.12.5) and 40 random bits. */
    private final long isid = 0x80L << 40 | (ThreadLocalRandom.current().nextLong() & 0xffffffffffL);
    private boolean transit;
    private int expCmdSn = 1;
    private int maxCmdSn = 1;
    private int statSn = -1;

    LoginRound(PduChannel pdus, String description) {
        this.pdus = pdus;
        this.description = description;
    }

    /** Whether the target's last answer moved to the next stage. */
    boolean transit() {
        return transit;
    }

    /** The StatSN of the last Login Response. */
    int statSn() {
        return statSn;
    }

    int expCmdSn() {
        return expCmdSn;
    }

    int maxCmdSn() {
        return maxCmdSn;
    }

    /**
     * Sends {@code keys} in stage {@code csg}, asking to move on to {@code nsg} if {@code transitRequested}; returns
     * the keys the target answered (a key repeated keeps its last value).
     */
    Map<String, String> send(int csg, boolean transitRequested, int nsg, Map<String, String> keys)
            throws IOException {
        byte[] data = TextKeys.encode(keys);
        ByteBuffer h = ByteBuffer.allocate(Bhs.LENGTH);
        Bhs.startRequest(h, Bhs.OP_LOGIN_REQUEST | Bhs.IMMEDIATE_BIT,
                (transitRequested ? Bhs.FINAL_BIT : 0) | csg << Bhs.CURRENT_STAGE_SHIFT
                        | (transitRequested ? nsg : 0));
        Bhs.putDataSegmentLength(h, data.length);
        Bhs.putNewSessionIsid(h, isid);
        Bhs.putItt(h, LOGIN_ITT);
        Bhs.putCmdSn(h, expCmdSn);
        Bhs.putExpStatSn(h, statSn + 1);
        pdus.send(h, ByteBuffer.wrap(data), 0, data.length);

        ByteBuffer r = ByteBuffer.allocate(Bhs.LENGTH);
        pdus.readHeader(r);
        int op = Bhs.opcode(r);
        if (op != Bhs.OP_LOGIN_RESPONSE) {
            throw new IscsiLoginException(description + ": expected a Login Response, got opcode 0x"
                    + Integer.toHexString(op), -1, -1);
        }
        int dsl = Bhs.dataSegmentLength(r);
        if (dsl > LOGIN_SEGMENT_LIMIT) {
            throw new IscsiProtocolException(description + ": a Login Response with a " + dsl
                    + "-byte data segment; login PDUs carry at most " + LOGIN_SEGMENT_LIMIT + " bytes (RFC 7143)");
        }
        ByteBuffer body = ByteBuffer.allocate(Bhs.paddedLength(dsl));
        pdus.readPadded(body, dsl);
        int statusClass = Bhs.loginStatusClass(r);
        int statusDetail = Bhs.loginStatusDetail(r);
        statSn = Bhs.statSn(r);
        expCmdSn = Bhs.expCmdSn(r);
        maxCmdSn = Bhs.maxCmdSn(r);
        if (statusClass != 0) {
            throw new IscsiLoginException(description + ": login refused: " + statusText(statusClass, statusDetail),
                    statusClass, statusDetail);
        }
        transit = (Bhs.flags(r) & Bhs.FINAL_BIT) != 0;
        return TextKeys.parse(body.clear().limit(dsl), null);
    }

    /** The refusal in words, with the likely fix. */
    private static String statusText(int cls, int detail) {
        String code = String.format(" (status 0x%02x%02x)", cls, detail);
        if (cls == 2) {
            return switch (detail) {
                case 1 -> "authentication failed" + code + "; check the CHAP user and secret";
                case 2 -> "this initiator is not authorized" + code + "; check the target's allowed initiators";
                case 3 -> "no such target" + code + "; check the target name (iscsi-ls -s iscsi://HOST:PORT/ lists them)";
                case 4 -> "the target was removed" + code;
                default -> "initiator error" + code;
            };
        }
        if (cls == 1) {
            return "the target redirects elsewhere" + code + "; this initiator does not follow redirections";
        }
        return "target error" + code + "; see the target's log";
    }
}
