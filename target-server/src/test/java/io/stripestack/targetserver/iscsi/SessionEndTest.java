package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.Future;
import io.stripestack.iscsi.proto.Bhs;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link SessionEnd} over a fake {@link Wire} and fake {@link SessionEnd.Commands}: logout and drain. */
class SessionEndTest {
    /** Commands as the session's end sees them: a count of executing ones and what it was told. */
    private static final class Commands implements SessionEnd.Commands {
        int executing;
        final List<String> told = new ArrayList<>();

        @Override
        public int executing() {
            return executing;
        }

        @Override
        public void stopAdmitting() {
            told.add("stop admitting");
        }

        @Override
        public void dropUnstartedForLogout() {
            told.add("drop unstarted");
        }
    }

    private final RecordingWire wire = new RecordingWire();
    private final SequenceNumbers sequence = new SequenceNumbers();
    private final Commands commands = new Commands();
    private final SessionEnd end = new SessionEnd(wire, sequence, Duration.ofSeconds(10));

    SessionEndTest() {
        sequence.start(0, 1, 16);
    }

    private void logout(int reason) {
        ByteBuf h = IscsiTestInitiator.bhs(Bhs.OP_LOGOUT_REQUEST | Bhs.IMMEDIATE_BIT, 0x80 | reason, 0);
        h.setInt(16, 0x55);
        end.logout(new LogoutRequestHeader().wrap(h));
    }

    @Test
    void aLogoutIsAnsweredOnlyOnceTheLastExecutingCommandWasAnswered() {
        end.started(new NegotiatedParameters(), commands);
        commands.executing = 1;

        logout(0);

        assertEquals(List.of("stop admitting", "drop unstarted"), commands.told);
        assertEquals(List.of(), wire.withOpcode(Bhs.OP_LOGOUT_RESPONSE), "a command still executes");
        assertFalse(wire.closedAfterFlush);

        commands.executing = 0;
        end.taskEnded();

        List<RecordingWire.Written> responses = wire.withOpcode(Bhs.OP_LOGOUT_RESPONSE);
        assertEquals(1, responses.size());
        assertEquals(0x55, responses.get(0).itt());
        assertEquals(0, responses.get(0).header()[2], "closed successfully");
        assertTrue(wire.closedAfterFlush);
    }

    @Test
    void aLogoutToRemoveTheConnectionForRecoveryIsRefusedAndTheSessionGoesOn() {
        end.started(new NegotiatedParameters(), commands);

        logout(2);

        assertEquals(List.of(), commands.told);
        assertEquals(2, wire.withOpcode(Bhs.OP_LOGOUT_RESPONSE).get(0).header()[2], "recovery not supported");
        assertFalse(wire.closedAfterFlush);
    }

    @Test
    void aDrainBeforeTheSessionStartedClosesAtOnceAndStopsItsCommandsWhenTheyStart() {
        Future<Void> drained = end.drain();

        assertTrue(wire.closed);
        assertTrue(drained.isSuccess());
        end.started(new NegotiatedParameters(), commands);
        assertEquals(List.of("stop admitting"), commands.told, "a session that starts while draining admits nothing");
    }
}
