package io.stripestack.targetserver.iscsi;

/**
 * The operational parameters of one session and connection after login (RFC 7143 section 13),
 * starting from the RFC defaults. Written only by {@link LoginNegotiator} during login, read by the
 * connection afterwards; both on the connection's event loop.
 */
final class NegotiatedParameters {
    /** MaxRecvDataSegmentLength the initiator declared: the largest data segment we may send it. */
    int initiatorMaxRecvDataSegmentLength = 8192;
    /** MaxRecvDataSegmentLength this target declared: the largest data segment it accepts. */
    int targetMaxRecvDataSegmentLength = 8192;
    int maxBurstLength = 262144;
    int firstBurstLength = 65536;
    boolean immediateData = true;
    boolean initialR2T = true;
    int maxOutstandingR2T = 1;
    boolean headerDigest;
    boolean dataDigest;
    int defaultTime2Wait = 2;
    int defaultTime2Retain = 20;
}
