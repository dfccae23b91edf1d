package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.targetserver.iscsi.IscsiTestInitiator.Response;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A login that is under way when the administration replaces or removes its target's definition: it was
 * looked up, and CHAP checked, against the old definition, so it must not reach the full feature phase (the
 * change ends only the sessions registered when it is made). Each test changes the directory between two login
 * requests on one EmbeddedChannel, the order a race between the admin worker and an event loop can take.
 */
class LoginDuringAdministrationTest {
    private static final String[] OPERATIONAL = {"HeaderDigest=None", "DataDigest=None", "MaxRecvDataSegmentLength=262144"};

    @Test
    void anAclThatNoLongerListsTheInitiatorRefusesTheLoginWithAuthorizationFailure() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            securityStageWithoutChap(i);
            IscsiTargetDefinition old = i.server.target(IscsiTestInitiator.TARGET_IQN);
            i.server.directory.replace(old.changed().allowedInitiators(List.of("iqn.2026-11.other:host")).build());
            Response op = i.login(1, true, 3, OPERATIONAL);
            assertEquals(LoginNegotiator.STATUS_AUTHORIZATION_FAILURE, op.shortAt(36));
            assertRefused(i, op);
        }
    }

    @Test
    void aDeletedTargetRefusesTheLoginWithNotFound() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            securityStageWithoutChap(i);
            i.server.directory.remove(IscsiTestInitiator.TARGET_IQN);
            Response op = i.login(1, true, 3, OPERATIONAL);
            assertEquals(LoginNegotiator.STATUS_NOT_FOUND, op.shortAt(36));
            assertRefused(i, op);
        }
    }

    /**
     * The replaced definition's secret is zeroed when the administration closes it; a response computed over
     * that zeroed secret passes the old exchange, and only the check against the current definition stops it.
     */
    @Test
    void chapReplacedBetweenChallengeAndResponseRefusesTheLoginEvenWithAResponseTheOldExchangeAccepts()
            throws Exception {
        byte[] oldSecret = "old-secret-12345".getBytes(StandardCharsets.UTF_8);
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build(),
                b -> b.chap("alice", oldSecret.clone()))) {
            Response auth = i.login(0, false, 0, "InitiatorName=" + IscsiTestInitiator.INITIATOR_IQN,
                    "TargetName=" + IscsiTestInitiator.TARGET_IQN, "SessionType=Normal", "AuthMethod=CHAP");
            assertEquals("CHAP", auth.keys().get("AuthMethod"));
            Response challenge = i.login(0, false, 0, "CHAP_A=5");
            int id = Integer.parseInt(challenge.keys().get("CHAP_I"));
            byte[] c = HexFormat.of().parseHex(challenge.keys().get("CHAP_C").substring(2));

            IscsiTargetDefinition old = i.server.target(IscsiTestInitiator.TARGET_IQN);
            i.server.directory.replace(old.changed().chap("alice", "new-secret-67890".getBytes(StandardCharsets.UTF_8))
                    .build());
            old.close(); // as LiveTargets does with the definition it replaced

            Response proved = i.login(0, true, 3, "CHAP_N=alice",
                    "CHAP_R=0x" + HexFormat.of().formatHex(chapResponse(id, new byte[oldSecret.length], c)));
            assertEquals(LoginNegotiator.STATUS_SERVICE_UNAVAILABLE, proved.shortAt(36),
                    "the initiator may log in again, against the new credentials");
            assertRefused(i, proved);
        }
    }

    @Test
    void aDefinitionLeftAsItWasLetsTheLoginThrough() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            securityStageWithoutChap(i);
            IscsiTargetDefinition other = IscsiTargetDefinition.builder("iqn.2026-11.io.stripestack:other",
                    i.server.target(IscsiTestInitiator.TARGET_IQN).router()).build();
            i.server.directory.add(other); // a change elsewhere in the directory
            Response op = i.login(1, true, 3, OPERATIONAL);
            assertEquals(LoginNegotiator.STATUS_SUCCESS, op.shortAt(36));
            assertEquals(1, i.server.sessions.size());
            assertTrue(i.channel.isActive());
        }
    }

    private static void securityStageWithoutChap(IscsiTestInitiator i) {
        Response sec = i.login(0, true, 1, "InitiatorName=" + IscsiTestInitiator.INITIATOR_IQN,
                "TargetName=" + IscsiTestInitiator.TARGET_IQN, "SessionType=Normal", "AuthMethod=None");
        assertEquals(0, sec.shortAt(36), "security stage status");
    }

    private static void assertRefused(IscsiTestInitiator i, Response last) {
        assertEquals(0, last.shortAt(14), "no TSIH: no session");
        assertEquals(0, last.flags() & 0x80, "no transit");
        assertEquals(0, i.server.sessions.size(), "no session registered");
        i.channel.runPendingTasks();
        assertFalse(i.channel.isActive(), "the refused login's connection is closed");
    }

    private static byte[] chapResponse(int id, byte[] secret, byte[] challenge) throws Exception {
        MessageDigest md5 = MessageDigest.getInstance("MD5");
        md5.update((byte) id);
        md5.update(secret);
        md5.update(challenge);
        return md5.digest();
    }
}
