package io.stripestack.targetserver.iscsi;

import static io.stripestack.targetserver.iscsi.IscsiTestInitiator.map;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.targetserver.scsi.ScsiCommand;
import io.stripestack.targetserver.scsi.ScsiCommandRouter;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Login negotiation without any channel: key result functions, stage rules, CHAP. */
class IscsiLoginNegotiatorTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:neg";
    private static final String INITIATOR = "iqn.1993-08.org.debian:01:neg";
    private static final byte[] SECRET = "initiator-secret-1".getBytes(StandardCharsets.UTF_8);
    private static final byte[] MUTUAL_SECRET = "target-secret-22".getBytes(StandardCharsets.UTF_8);

    private static final ScsiCommandRouter NO_LUNS = new ScsiCommandRouter() {
        @Override public void execute(ScsiCommand command) { command.completeWithStatus(ScsiCommand.BUSY); }
        @Override public List<Long> luns() { return List.of(); }
        @Override public void nexusAdded(String nexus) { }
        @Override public void nexusRemoved(String nexus) { }
        @Override public void lunReset(String nexus, long lun) { }
        @Override public void targetReset(String nexus) { }
    };

    private static LoginNegotiator negotiator(IscsiServerSettings settings, IscsiTargetDefinition target) {
        return new LoginNegotiator(settings, iqn -> iqn.equals(target.iqn()) ? target : null);
    }

    private static IscsiTargetDefinition plainTarget() {
        return IscsiTargetDefinition.builder(IQN, NO_LUNS).build();
    }

    private static IscsiTargetDefinition chapTarget() {
        return IscsiTargetDefinition.builder(IQN, NO_LUNS).chap("user1", SECRET).mutualChap("target1", MUTUAL_SECRET).build();
    }

    @Test
    void operationalKeysFollowTheirResultFunctions() {
        IscsiServerSettings settings = IscsiServerSettings.builder().maxBurstLength(65536).firstBurstLength(16384)
                .maxOutstandingR2T(2).maxRecvDataSegmentLength(131072).headerDigestAllowed(false).build();
        LoginNegotiator n = negotiator(settings, plainTarget());
        LoginNegotiator.Step step = n.process(1, true, 3, 0, map("InitiatorName=" + INITIATOR, "TargetName=" + IQN,
                "MaxBurstLength=16776192", "FirstBurstLength=262144", "MaxOutstandingR2T=8",
                "InitialR2T=No", "ImmediateData=No", "DefaultTime2Wait=0", "DefaultTime2Retain=60",
                "ErrorRecoveryLevel=2", "MaxConnections=4", "HeaderDigest=CRC32C,None", "DataDigest=CRC32C",
                "DataPDUInOrder=No", "MaxRecvDataSegmentLength=0x4000", "OFMarkInt=2048~8192",
                "X-com.example.Foo=1", "Bogus=1", "MaxBurstLength2=1", "X#NodeArchitecture=Linux"));
        assertTrue(step.enteredFullFeature());
        Map<String, String> k = step.keys;
        assertEquals("65536", k.get("MaxBurstLength"), "min");
        assertEquals("16384", k.get("FirstBurstLength"), "min");
        assertEquals("2", k.get("MaxOutstandingR2T"), "min");
        assertEquals("No", k.get("InitialR2T"), "OR of No and No");
        assertEquals("No", k.get("ImmediateData"), "AND");
        assertEquals("2", k.get("DefaultTime2Wait"), "max");
        assertEquals("20", k.get("DefaultTime2Retain"), "min");
        assertEquals("0", k.get("ErrorRecoveryLevel"), "min");
        assertEquals("1", k.get("MaxConnections"), "min");
        assertEquals("None", k.get("HeaderDigest"), "CRC32C not allowed by settings");
        assertEquals("CRC32C", k.get("DataDigest"));
        assertEquals("Yes", k.get("DataPDUInOrder"), "OR with the target's Yes");
        assertEquals("131072", k.get("MaxRecvDataSegmentLength"), "declares the target's own");
        assertEquals("Reject", k.get("OFMarkInt"));
        assertEquals("NotUnderstood", k.get("X-com.example.Foo"));
        assertEquals("NotUnderstood", k.get("Bogus"));
        assertFalse(k.containsKey("X#NodeArchitecture"), "declarative, no answer");
        assertEquals("1", k.get("TargetPortalGroupTag"));
        NegotiatedParameters p = n.parameters();
        assertEquals(16384, p.initiatorMaxRecvDataSegmentLength, "hex value parsed");
        assertEquals(131072, p.targetMaxRecvDataSegmentLength);
        assertFalse(p.immediateData);
        assertFalse(p.initialR2T);
        assertTrue(p.dataDigest);
        assertFalse(p.headerDigest);
    }

    @Test
    void initialR2tIsYesWhenTheTargetDemandsItAndInvalidValuesAreRejected() {
        IscsiServerSettings settings = IscsiServerSettings.builder().initialR2T(true).build();
        LoginNegotiator n = negotiator(settings, plainTarget());
        LoginNegotiator.Step step = n.process(1, false, 0, 0, map("InitiatorName=" + INITIATOR, "TargetName=" + IQN,
                "InitialR2T=No", "MaxBurstLength=100", "ImmediateData=Maybe"));
        assertFalse(step.failed());
        assertFalse(step.transit, "no transit unless asked");
        assertEquals("Yes", step.keys.get("InitialR2T"));
        assertEquals("Reject", step.keys.get("MaxBurstLength"), "below 512");
        assertEquals("Reject", step.keys.get("ImmediateData"));
        // defaults stay where nothing valid was negotiated
        assertEquals(262144, n.parameters().maxBurstLength);
        LoginNegotiator.Step last = n.process(1, true, 3, 0, map());
        assertTrue(last.enteredFullFeature());
        assertEquals("262144", last.keys.get("MaxRecvDataSegmentLength"), "declared before full feature phase");
    }

    @Test
    void discoverySessionAnswersSessionKeysIrrelevant() {
        LoginNegotiator n = negotiator(IscsiServerSettings.builder().build(), plainTarget());
        LoginNegotiator.Step step = n.process(1, true, 3, 0, map("InitiatorName=" + INITIATOR, "SessionType=Discovery",
                "MaxBurstLength=65536", "InitialR2T=No", "MaxRecvDataSegmentLength=32768"));
        assertTrue(step.enteredFullFeature());
        assertTrue(n.discovery());
        assertNull(n.target());
        assertEquals("Irrelevant", step.keys.get("MaxBurstLength"));
        assertEquals("Irrelevant", step.keys.get("InitialR2T"));
        assertEquals(32768, n.parameters().initiatorMaxRecvDataSegmentLength);
    }

    @Test
    void loginStatusClasses() {
        IscsiServerSettings s = IscsiServerSettings.builder().build();
        assertEquals(0x0203, negotiator(s, plainTarget()).process(0, true, 1, 0,
                map("InitiatorName=" + INITIATOR, "TargetName=iqn.2026-11.x:missing", "AuthMethod=None")).status);
        assertEquals(0x0207, negotiator(s, plainTarget()).process(0, true, 1, 0,
                map("InitiatorName=" + INITIATOR, "AuthMethod=None")).status);
        assertEquals(0x0205, negotiator(s, plainTarget()).process(0, true, 1, 1,
                map("InitiatorName=" + INITIATOR, "TargetName=" + IQN)).status);
        assertEquals(0x0209, negotiator(s, plainTarget()).process(0, true, 1, 0,
                map("InitiatorName=" + INITIATOR, "SessionType=Weird")).status);
        IscsiTargetDefinition acl = IscsiTargetDefinition.builder(IQN, NO_LUNS).allowedInitiators(List.of("iqn.2026-11.x:other")).build();
        assertEquals(0x0202, negotiator(s, acl).process(0, true, 1, 0,
                map("InitiatorName=" + INITIATOR, "TargetName=" + IQN, "AuthMethod=None")).status);
        // CHAP required: skipping security or offering only None fails authentication
        assertEquals(0x0201, negotiator(s, chapTarget()).process(1, true, 3, 0,
                map("InitiatorName=" + INITIATOR, "TargetName=" + IQN)).status);
        assertEquals(0x0201, negotiator(s, chapTarget()).process(0, true, 1, 0,
                map("InitiatorName=" + INITIATOR, "TargetName=" + IQN, "AuthMethod=None")).status);
        // stage going backwards
        LoginNegotiator n = negotiator(s, plainTarget());
        assertFalse(n.process(0, true, 1, 0, map("InitiatorName=" + INITIATOR, "TargetName=" + IQN, "AuthMethod=None")).failed());
        assertEquals(0x0200, n.process(0, true, 1, 0, map()).status);
    }

    @Test
    void chapMd5OneWayAndMutual() throws Exception {
        LoginNegotiator n = negotiator(IscsiServerSettings.builder().build(), chapTarget());
        LoginNegotiator.Step first = n.process(0, true, 1, 0,
                map("InitiatorName=" + INITIATOR, "TargetName=" + IQN, "AuthMethod=CHAP,None"));
        assertEquals("CHAP", first.keys.get("AuthMethod"));
        assertFalse(first.transit, "CHAP not done yet");
        LoginNegotiator.Step challenge = n.process(0, false, 0, 0, map("CHAP_A=7,5"));
        assertEquals("7", challenge.keys.get("CHAP_A"), "first supported algorithm of the initiator's list");
        int id = Integer.parseInt(challenge.keys.get("CHAP_I"));
        byte[] c = HexFormat.of().parseHex(challenge.keys.get("CHAP_C").substring(2));
        assertEquals(32, c.length);
        byte[] myChallenge = new byte[16];
        java.util.Arrays.fill(myChallenge, (byte) 0x3c);
        LoginNegotiator.Step done = n.process(0, true, 1, 0, map("CHAP_N=user1",
                "CHAP_R=0x" + HexFormat.of().formatHex(chap("SHA-256", id, SECRET, c)),
                "CHAP_I=77", "CHAP_C=0x" + HexFormat.of().formatHex(myChallenge)));
        assertFalse(done.failed());
        assertTrue(done.transit);
        assertEquals("target1", done.keys.get("CHAP_N"));
        assertEquals("0x" + HexFormat.of().formatHex(chap("SHA-256", 77, MUTUAL_SECRET, myChallenge)), done.keys.get("CHAP_R"));
        assertTrue(n.process(1, true, 3, 0, map("MaxRecvDataSegmentLength=65536")).enteredFullFeature());
    }

    @Test
    void chapWrongResponseWrongNameAndReflectedChallengeFail() throws Exception {
        for (int variant = 0; variant < 3; variant++) {
            LoginNegotiator n = negotiator(IscsiServerSettings.builder().build(), chapTarget());
            n.process(0, false, 0, 0, map("InitiatorName=" + INITIATOR, "TargetName=" + IQN, "AuthMethod=CHAP"));
            LoginNegotiator.Step challenge = n.process(0, false, 0, 0, map("CHAP_A=5"));
            assertEquals("5", challenge.keys.get("CHAP_A"));
            int id = Integer.parseInt(challenge.keys.get("CHAP_I"));
            String c = challenge.keys.get("CHAP_C");
            byte[] right = chap("MD5", id, SECRET, HexFormat.of().parseHex(c.substring(2)));
            Map<String, String> answer;
            if (variant == 0) {
                right[0] ^= 1;
                answer = map("CHAP_N=user1", "CHAP_R=0x" + HexFormat.of().formatHex(right));
            } else if (variant == 1) {
                answer = map("CHAP_N=someone", "CHAP_R=0x" + HexFormat.of().formatHex(right));
            } else {
                answer = map("CHAP_N=user1", "CHAP_R=0x" + HexFormat.of().formatHex(right), "CHAP_I=1", "CHAP_C=" + c);
            }
            assertEquals(0x0201, n.process(0, true, 1, 0, answer).status, "variant " + variant);
        }
    }

    @Test
    void chapBase64ResponseIsAccepted() throws Exception {
        LoginNegotiator n = negotiator(IscsiServerSettings.builder().build(), chapTarget());
        n.process(0, false, 0, 0, map("InitiatorName=" + INITIATOR, "TargetName=" + IQN, "AuthMethod=CHAP"));
        LoginNegotiator.Step challenge = n.process(0, false, 0, 0, map("CHAP_A=5"));
        byte[] r = chap("MD5", Integer.parseInt(challenge.keys.get("CHAP_I")), SECRET,
                HexFormat.of().parseHex(challenge.keys.get("CHAP_C").substring(2)));
        LoginNegotiator.Step done = n.process(0, true, 3, 0,
                map("CHAP_N=user1", "CHAP_R=0b" + java.util.Base64.getEncoder().encodeToString(r)));
        assertTrue(done.enteredFullFeature());
        assertNotNull(done.keys.get("MaxRecvDataSegmentLength"));
    }

    @Test
    void targetDefinitionValidatesAndZeroesSecrets() {
        char[] secret = "a-long-enough-secret".toCharArray();
        IscsiTargetDefinition t = IscsiTargetDefinition.builder(IQN, NO_LUNS).chap("u", secret).build();
        assertFalse(t.toString().contains("secret"));
        byte[] stored = t.chapSecret();
        t.close();
        for (byte b : stored) {
            assertEquals(0, b);
        }
        assertThrows(IllegalArgumentException.class, () -> IscsiTargetDefinition.builder("disk1", NO_LUNS).build());
        assertThrows(IllegalArgumentException.class,
                () -> IscsiTargetDefinition.builder(IQN, NO_LUNS).chap("u", "short".getBytes(StandardCharsets.UTF_8)).build());
        assertThrows(IllegalArgumentException.class, () -> IscsiServerSettings.builder().firstBurstLength(1 << 20)
                .maxBurstLength(65536).build());
    }

    private static byte[] chap(String algorithm, int id, byte[] secret, byte[] challenge) throws Exception {
        MessageDigest md = MessageDigest.getInstance(algorithm);
        md.update((byte) id);
        md.update(secret);
        md.update(challenge);
        return md.digest();
    }
}
