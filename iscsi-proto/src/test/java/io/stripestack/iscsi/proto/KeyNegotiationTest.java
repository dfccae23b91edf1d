package io.stripestack.iscsi.proto;

import static io.stripestack.iscsi.proto.KeyNegotiation.check;
import static io.stripestack.iscsi.proto.KeyNegotiation.inForce;
import static io.stripestack.iscsi.proto.KeyNegotiation.resolve;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.iscsi.proto.KeyNegotiation.Verdict;
import io.stripestack.iscsi.proto.LoginKey.Phase;
import io.stripestack.iscsi.proto.LoginKey.Sender;
import org.junit.jupiter.api.Test;

/** The key table's result functions, ranges and placement rules, each as RFC 7143 sections 6 and 13 give them. */
class KeyNegotiationTest {

    @Test
    void aListTakesTheFirstOfferedValueTheResponderSupports() {
        assertEquals("CRC32C", resolve(LoginKey.HEADER_DIGEST, "CRC32C,None", "None,CRC32C"));
        assertEquals("None", resolve(LoginKey.HEADER_DIGEST, "None,CRC32C", "None,CRC32C"), "the offer's order rules");
        assertEquals("None", resolve(LoginKey.DATA_DIGEST, "CRC32C,None", "None"));
        assertNull(resolve(LoginKey.DATA_DIGEST, "CRC32C", "None"), "nothing in common: Reject");
        assertNull(resolve(LoginKey.HEADER_DIGEST, "crc32c", "None,CRC32C"), "values are case-sensitive");
        assertEquals("CHAP", resolve(LoginKey.AUTH_METHOD, "KRB5,CHAP,None", "CHAP"));
    }

    @Test
    void numbersTakeTheMinimumOrTheMaximumAsTheKeySays() {
        assertEquals("65536", resolve(LoginKey.MAX_BURST_LENGTH, "262144", "65536"));
        assertEquals("4096", resolve(LoginKey.FIRST_BURST_LENGTH, "0x1000", "65536"), "hex offers count");
        assertEquals("1", resolve(LoginKey.MAX_CONNECTIONS, "4", "1"));
        assertEquals("0", resolve(LoginKey.ERROR_RECOVERY_LEVEL, "2", "0"));
        assertEquals("20", resolve(LoginKey.DEFAULT_TIME_2_RETAIN, "60", "20"));
        assertEquals("5", resolve(LoginKey.DEFAULT_TIME_2_WAIT, "5", "2"), "DefaultTime2Wait is the maximum");
        assertEquals("2", resolve(LoginKey.DEFAULT_TIME_2_WAIT, "0", "2"));
    }

    @Test
    void booleansAreAndedOrOredAsTheKeySays() {
        assertEquals("No", resolve(LoginKey.IMMEDIATE_DATA, "Yes", "No"));
        assertEquals("Yes", resolve(LoginKey.IMMEDIATE_DATA, "Yes", "Yes"));
        assertEquals("Yes", resolve(LoginKey.INITIAL_R2T, "No", "Yes"));
        assertEquals("No", resolve(LoginKey.INITIAL_R2T, "No", "No"));
        assertEquals("Yes", resolve(LoginKey.DATA_PDU_IN_ORDER, "No", "Yes"));
        assertEquals("Yes", resolve(LoginKey.DATA_SEQUENCE_IN_ORDER, "No", "Yes"));
        assertNull(resolve(LoginKey.IMMEDIATE_DATA, "yes", "Yes"), "only Yes and No");
    }

    @Test
    void aDeclarationIsTakenAsDeclaredWithinItsRange() {
        assertEquals("0x4000", resolve(LoginKey.MAX_RECV_DATA_SEGMENT_LENGTH, "0x4000", "8192"));
        assertEquals(16384, KeyNegotiation.number(LoginKey.MAX_RECV_DATA_SEGMENT_LENGTH, "0x4000"));
        assertNull(resolve(LoginKey.MAX_RECV_DATA_SEGMENT_LENGTH, "511", "8192"));
    }

    @Test
    void valuesOutOfTheKeysRangeAreRejected() {
        assertNull(resolve(LoginKey.MAX_BURST_LENGTH, "511", "65536"));
        assertNull(resolve(LoginKey.MAX_BURST_LENGTH, "16777216", "65536"));
        assertEquals("512", resolve(LoginKey.MAX_BURST_LENGTH, "512", "65536"), "the range's ends are in it");
        assertEquals("16777215", resolve(LoginKey.MAX_RECV_DATA_SEGMENT_LENGTH, "16777215", "8192"));
        assertNull(resolve(LoginKey.ERROR_RECOVERY_LEVEL, "3", "0"));
        assertNull(resolve(LoginKey.MAX_CONNECTIONS, "0", "1"));
        assertNull(resolve(LoginKey.MAX_OUTSTANDING_R2T, "65536", "1"));
        assertNull(resolve(LoginKey.DEFAULT_TIME_2_WAIT, "3601", "2"));
        assertNull(resolve(LoginKey.DEFAULT_TIME_2_RETAIN, "-1", "20"));
        assertNull(resolve(LoginKey.ISCSI_PROTOCOL_LEVEL, "32", "1"));
        assertNull(resolve(LoginKey.MAX_BURST_LENGTH, "lots", "65536"));
    }

    @Test
    void theOfferingSideTakesTheDefaultWhenTheAnswerIsUnusable() {
        assertEquals("262144", inForce(LoginKey.MAX_BURST_LENGTH, "1048576", null), "no answer: the default");
        assertEquals("262144", inForce(LoginKey.MAX_BURST_LENGTH, "1048576", "Reject"));
        assertEquals("262144", inForce(LoginKey.MAX_BURST_LENGTH, "1048576", "100"), "out of range: the default");
        assertEquals("65536", inForce(LoginKey.MAX_BURST_LENGTH, "1048576", "65536"));
        assertEquals("No", inForce(LoginKey.IMMEDIATE_DATA, "No", "Yes"));
        assertEquals("Yes", inForce(LoginKey.IMMEDIATE_DATA, "Yes", "NotUnderstood"), "ImmediateData's default Yes");
        assertEquals("Yes", inForce(LoginKey.INITIAL_R2T, "No", null), "InitialR2T's default Yes, ORed");
        assertEquals("8192", inForce(LoginKey.MAX_RECV_DATA_SEGMENT_LENGTH, "262144", "Irrelevant"));
        assertEquals("CRC32C", inForce(LoginKey.HEADER_DIGEST, "CRC32C", "CRC32C"));
        assertNull(inForce(LoginKey.HEADER_DIGEST, "CRC32C", "None"), "an answer we did not offer");
        assertNull(inForce(LoginKey.HEADER_DIGEST, "CRC32C", null), "the default None was not offered");
    }

    @Test
    void anUnknownKeyIsNotUnderstood() {
        assertNull(LoginKey.byName("Bogus"));
        assertNull(LoginKey.byName("headerdigest"), "names are case-sensitive");
        assertEquals(Verdict.UNKNOWN, check("Bogus", Sender.INITIATOR, Phase.OPERATIONAL_STAGE, true, false));
        assertEquals(Verdict.UNKNOWN, check("MaxBurstLength2", Sender.INITIATOR, Phase.OPERATIONAL_STAGE, true, false));
    }

    @Test
    void aKeyFromTheWrongSideIsRefused() {
        for (String declaration : new String[] {"TargetAlias", "TargetAddress", "TargetPortalGroupTag"}) {
            assertEquals(Verdict.WRONG_SENDER, check(declaration, Sender.INITIATOR, Phase.OPERATIONAL_STAGE, true,
                    false), declaration);
            assertEquals(Verdict.NEGOTIATE, check(declaration, Sender.TARGET, Phase.OPERATIONAL_STAGE, true,
                    false), declaration);
        }
        for (String initiatorOnly : new String[] {"InitiatorName", "InitiatorAlias", "SessionType", "SendTargets"}) {
            assertEquals(Verdict.WRONG_SENDER, check(initiatorOnly, Sender.TARGET, Phase.FULL_FEATURE, true, false),
                    initiatorOnly);
        }
        assertEquals(Verdict.NEGOTIATE, check("MaxBurstLength", Sender.TARGET, Phase.OPERATIONAL_STAGE, true, false));
    }

    @Test
    void aKeyOutOfItsPhaseIsRefused() {
        assertEquals(Verdict.NEGOTIATE, check("AuthMethod", Sender.INITIATOR, Phase.SECURITY_STAGE, true, false));
        assertEquals(Verdict.WRONG_PHASE, check("AuthMethod", Sender.INITIATOR, Phase.OPERATIONAL_STAGE, true, false));
        assertEquals(Verdict.WRONG_PHASE, check("CHAP_A", Sender.INITIATOR, Phase.OPERATIONAL_STAGE, true, false));
        assertEquals(Verdict.WRONG_PHASE, check("SendTargets", Sender.INITIATOR, Phase.OPERATIONAL_STAGE, true,
                false), "SendTargets is for the full feature phase");
        assertEquals(Verdict.NEGOTIATE, check("SendTargets", Sender.INITIATOR, Phase.FULL_FEATURE, true, false));
        assertEquals(Verdict.WRONG_PHASE, check("HeaderDigest", Sender.INITIATOR, Phase.FULL_FEATURE, true, false),
                "digests are set at login");
        assertEquals(Verdict.NEGOTIATE, check("HeaderDigest", Sender.INITIATOR, Phase.OPERATIONAL_STAGE, false,
                false), "per connection: any connection's login");
        assertEquals(Verdict.WRONG_PHASE, check("MaxBurstLength", Sender.INITIATOR, Phase.OPERATIONAL_STAGE, false,
                false), "session-wide: the leading connection only");
        assertEquals(Verdict.NEGOTIATE, check("MaxBurstLength", Sender.INITIATOR, Phase.SECURITY_STAGE, true, false),
                "operational keys may come in the security stage");
        assertEquals(Verdict.NEGOTIATE, check("MaxRecvDataSegmentLength", Sender.TARGET, Phase.FULL_FEATURE, false,
                false), "MaxRecvDataSegmentLength may be declared anywhere");
    }

    @Test
    void aDiscoverySessionIgnoresTheNormalSessionsKeys() {
        for (LoginKey k : new LoginKey[] {LoginKey.MAX_CONNECTIONS, LoginKey.INITIAL_R2T, LoginKey.IMMEDIATE_DATA,
                LoginKey.MAX_BURST_LENGTH, LoginKey.FIRST_BURST_LENGTH, LoginKey.MAX_OUTSTANDING_R2T,
                LoginKey.DATA_PDU_IN_ORDER, LoginKey.DATA_SEQUENCE_IN_ORDER}) {
            assertEquals(Verdict.IRRELEVANT, check(k.keyName(), Sender.INITIATOR, Phase.OPERATIONAL_STAGE, true, true),
                    k.keyName());
        }
        assertEquals(Verdict.NEGOTIATE, check("HeaderDigest", Sender.INITIATOR, Phase.OPERATIONAL_STAGE, true, true));
        assertEquals(Verdict.NEGOTIATE, check("ErrorRecoveryLevel", Sender.INITIATOR, Phase.OPERATIONAL_STAGE, true,
                true));
    }

    @Test
    void everyNegotiatedKeyHasADefaultThatIsValidForIt() {
        for (LoginKey k : LoginKey.values()) {
            assertEquals(k, LoginKey.byName(k.keyName()));
            if (k.kind() != LoginKey.Kind.DECLARATIVE && k.use() != LoginKey.Use.SECURITY) {
                assertTrue(KeyNegotiation.valid(k, k.defaultValue()), k.keyName() + "=" + k.defaultValue());
            }
            if (k.numeric()) {
                assertTrue(k.min() <= k.max(), k.keyName());
            }
        }
        assertFalse(KeyNegotiation.valid(LoginKey.MAX_BURST_LENGTH, null));
    }
}
