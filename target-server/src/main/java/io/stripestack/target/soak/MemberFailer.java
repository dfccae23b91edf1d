package io.stripestack.target.soak;

import io.stripestack.raid5.Raid5Array;
import io.stripestack.target.control.AdminServer;
import java.io.IOException;
import java.nio.file.Path;

/** The soak's chaos action: fail one member of the RAID-5 array below the LUN, like mdadm --fail. */
@FunctionalInterface
public interface MemberFailer {
    /** Fails member {@code role} and returns a line describing the array afterwards. */
    String failMember(int role) throws IOException;

    /** In process: {@link Raid5Array#failMember}. */
    static MemberFailer of(Raid5Array array) {
        return role -> {
            array.failMember(role);
            return array.status().mdstat().replace('\n', ' ');
        };
    }

    /** A running server: {@code set ARRAY/fail ROLE} on its admin socket (stripestack ctl). */
    static MemberFailer viaAdminSocket(Path socket, String array) {
        return role -> {
            AdminServer.request(socket, "set " + array + "/fail " + role);
            return array + ": member " + role + " failed through " + socket;
        };
    }
}
