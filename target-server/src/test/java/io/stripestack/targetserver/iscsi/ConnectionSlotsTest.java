package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Who gets a connection slot, without sockets (the attacks over TCP are in {@link UnauthenticatedClientsTest}):
 * per address, per initiator name, and which connection makes room when every slot is taken.
 */
class ConnectionSlotsTest {
    private static IscsiConnection connection() {
        return new IscsiConnection(null, null, null);
    }

    @Test
    void oneAddressHoldsAtMostItsConnectionsAndOthersStillGetIn() {
        ConnectionSlots slots = new ConnectionSlots(8, 2, 8);
        assertTrue(slots.admit(connection(), "10.0.0.1").admitted());
        IscsiConnection second = connection();
        assertTrue(slots.admit(second, "10.0.0.1").admitted());
        ConnectionSlots.Admission third = slots.admit(connection(), "10.0.0.1");
        assertFalse(third.admitted());
        assertTrue(third.refusal().contains("server.max_connections_per_address"), third.refusal());
        assertTrue(slots.admit(connection(), "10.0.0.2").admitted());
        slots.release(second);
        assertTrue(slots.admit(connection(), "10.0.0.1").admitted(), "a released slot of the address is free again");
    }

    @Test
    void whenEverySlotIsTakenTheOldestConnectionNotLoggedInMakesRoom() {
        ConnectionSlots slots = new ConnectionSlots(3, 3, 8);
        IscsiConnection session = connection();
        IscsiConnection oldest = connection();
        IscsiConnection newer = connection();
        assertSame(ConnectionSlots.Admission.ADMITTED, slots.admit(session, "10.0.0.1"));
        assertTrue(slots.sessionStarting(session, "iqn.tenant", false));
        slots.admit(oldest, "10.0.0.2");
        slots.admit(newer, "10.0.0.3");
        ConnectionSlots.Admission tenant = slots.admit(connection(), "10.0.0.4");
        assertTrue(tenant.admitted());
        assertSame(oldest, tenant.displaced(), "the oldest one still logging in, never the logged-in session");
        assertEquals(3, slots.size());
        assertFalse(slots.sessionStarting(oldest, "iqn.late", false), "a displaced connection cannot log in");
        slots.release(oldest);
        assertEquals(3, slots.size(), "its release after displacement frees nothing twice");
    }

    @Test
    void whenEverySlotHoldsASessionANewcomerIsRefused() {
        ConnectionSlots slots = new ConnectionSlots(2, 2, 8);
        for (int i = 0; i < 2; i++) {
            IscsiConnection c = connection();
            slots.admit(c, "10.0.0." + i);
            assertTrue(slots.sessionStarting(c, "iqn.tenant-" + i, false));
        }
        ConnectionSlots.Admission refused = slots.admit(connection(), "10.0.0.9");
        assertFalse(refused.admitted());
        assertNull(refused.displaced());
        assertTrue(refused.refusal().contains("server.max_connections"), refused.refusal());
    }

    @Test
    void oneNameHoldsAtMostItsSessionsButMayReinstateOne() {
        ConnectionSlots slots = new ConnectionSlots(8, 8, 2);
        for (int i = 0; i < 2; i++) {
            IscsiConnection c = connection();
            slots.admit(c, "10.0.0.1");
            assertTrue(slots.sessionStarting(c, "iqn.one", false));
        }
        IscsiConnection third = connection();
        slots.admit(third, "10.0.0.1");
        assertFalse(slots.sessionStarting(third, "iqn.one", false), "a third session of the name");
        assertTrue(slots.sessionStarting(third, "iqn.one", true), "reinstating one of its two");
    }
}
