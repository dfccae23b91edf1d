package io.stripestack.bench.soak;

import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Files;
import io.stripestack.targetserver.control.AdminServer;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The soak's chaos actions on the RAID-5 array below the LUN: fail a member (mdadm --fail) and add a hot
 * spare, onto which the engine rebuilds while the soak goes on (mdadm --add). Called from the soak's
 * controlling thread only.
 */
public interface ArrayChaos {
    /** Fails member {@code role}; returns a line describing what happened. */
    String failMember(int role) throws IOException;

    /** Adds {@code file} as a hot spare (created with the members' size when missing); returns a line. */
    String addSpare(Path file) throws IOException;

    /** In process: {@link Raid5Array#failMember} and {@link Raid5Files#addSpare}. */
    static ArrayChaos of(Raid5Array array) {
        return new ArrayChaos() {
            @Override
            public String failMember(int role) throws IOException {
                array.failMember(role);
                return array.status().mdstat().replace('\n', ' ');
            }

            @Override
            public String addSpare(Path file) throws IOException {
                Raid5Files.addSpare(array, file.toAbsolutePath(), 0);
                return array.status().mdstat().replace('\n', ' ');
            }
        };
    }

    /** A running server: {@code set ARRAY/fail ROLE} and {@code set ARRAY/add FILE} on its admin socket. */
    static ArrayChaos viaAdminSocket(Path socket, String array) {
        return new ArrayChaos() {
            @Override
            public String failMember(int role) throws IOException {
                AdminServer.request(socket, "set " + array + "/fail " + role);
                return array + ": member " + role + " failed through " + socket;
            }

            @Override
            public String addSpare(Path file) throws IOException {
                AdminServer.request(socket, "set " + array + "/add " + file.toAbsolutePath());
                return array + ": " + file.toAbsolutePath() + " added as a spare through " + socket;
            }
        };
    }
}
