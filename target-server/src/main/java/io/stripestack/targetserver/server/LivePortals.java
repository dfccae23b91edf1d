package io.stripestack.targetserver.server;

import io.stripestack.targetserver.config.StripestackConfig.Portal;
import io.stripestack.targetserver.iscsi.IscsiServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The addresses the iSCSI server listens on (targetcli's portals): the configured ones from start-up, then added
 * and removed at run time. Each is kept as configured ({@code 127.0.0.1:0} stays port 0 when saved) and as bound.
 * Removing a portal stops new connections there; sessions logged in through it stay (end them with the ACL or
 * target verbs). Every refusal names what and why and changes nothing.
 *
 * <p>Concurrency: synchronized on this object; changed by the admin worker only. The iSCSI server guards its own
 * listeners.
 */
final class LivePortals {
    /** One portal as configured and as bound. */
    private record Entry(Portal configured, InetSocketAddress bound) {
    }

    private final IscsiServer iscsi;
    private final List<Entry> entries = new ArrayList<>();

    /** @param configured the configuration's portals, bound by {@code iscsi} in this order */
    LivePortals(IscsiServer iscsi, List<Portal> configured) {
        this.iscsi = iscsi;
        List<InetSocketAddress> bound = iscsi.boundAddresses();
        for (int i = 0; i < configured.size(); i++) {
            entries.add(new Entry(configured.get(i), bound.get(i)));
        }
    }

    synchronized String create(String text) throws IOException {
        Portal portal = Portal.parse(text);
        InetSocketAddress address = resolve(portal);
        for (Entry e : entries) {
            if (e.bound().getAddress().equals(address.getAddress()) && e.bound().getPort() == address.getPort()) {
                throw new IllegalArgumentException("the server listens on " + text(e.bound()) + " already; nothing changed");
            }
        }
        InetSocketAddress bound = iscsi.addPortal(address);
        entries.add(new Entry(portal, bound));
        return "listening on " + text(bound) + " too" + (portal.port() == 0 ? " (port 0: a free one was picked)" : "");
    }

    /** {@code text}: the portal as bound (as {@code ls} shows it) or as configured. */
    synchronized String delete(String text) throws IOException {
        Portal portal = Portal.parse(text);
        InetSocketAddress address = resolve(portal);
        for (Iterator<Entry> it = entries.iterator(); it.hasNext(); ) {
            Entry e = it.next();
            boolean same = e.bound().getAddress().equals(address.getAddress())
                    && (e.bound().getPort() == portal.port() || e.configured().equals(portal));
            if (!same) {
                continue;
            }
            if (entries.size() == 1) {
                throw new IllegalArgumentException(text(e.bound()) + " is the server's only portal: without it no"
                        + " initiator could reach the server; add another first; nothing changed");
            }
            iscsi.removePortal(e.bound());
            it.remove();
            return "no longer listening on " + text(e.bound()) + " (sessions logged in through it stay)";
        }
        throw new IllegalArgumentException("the server does not listen on " + text + " (portals: "
                + String.join(", ", entries.stream().map(e -> text(e.bound())).toList()) + "); nothing changed");
    }

    /** The portals as bound, for listing. */
    synchronized List<InetSocketAddress> bound() {
        return entries.stream().map(Entry::bound).toList();
    }

    /** The portals as configured, for saving. */
    synchronized List<Portal> running() {
        return entries.stream().map(Entry::configured).toList();
    }

    private static InetSocketAddress resolve(Portal portal) {
        try {
            return new InetSocketAddress(InetAddress.getByName(portal.host()), portal.port());
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("'" + portal.host() + "' is no address of this host's resolver; nothing changed", e);
        }
    }

    static String text(InetSocketAddress a) {
        String host = a.getAddress().getHostAddress();
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
    }
}
