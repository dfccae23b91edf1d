package io.stripestack.targetserver.config;

import io.stripestack.initiator.Digest;
import io.stripestack.remote.RemoteMemberOptions;
import io.stripestack.secrets.ChapSecretFile;
import io.stripestack.targetserver.config.StripestackConfig.RemoteMemberConfig;
import io.stripestack.targetserver.config.StripestackConfig.RemoteMembersConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;

/**
 * An array's {@code members} and {@code spares} lists, whose entries are member files or LUNs on remote
 * targets, and the array's {@code remote_*} keys (docs/configuration.md, "Remote members"). A remote entry is
 * {@code iscsi://HOST[:PORT]/IQN/LUN}, or with CHAP the mapping {@code {url: iscsi://USER@HOST[:PORT]/IQN/LUN,
 * chap_secret_file: FILE}}; a secret written into the URL is refused, since it would sit in the configuration
 * file. Stateless.
 */
final class MemberEntries {
    /** The files and the remote LUNs of one list, each in the list's order. */
    record Parsed(List<Path> files, List<RemoteMemberConfig> remotes) {
        int count() {
            return files.size() + remotes.size();
        }
    }

    private MemberEntries() {
    }

    /** {@code list} may be absent (no entries), a single entry or a list of them. */
    static Parsed parse(YamlNode list, Path dataDir) throws ConfigException {
        List<Path> files = new ArrayList<>();
        List<RemoteMemberConfig> remotes = new ArrayList<>();
        if (list == null) {
            return new Parsed(files, remotes);
        }
        for (YamlNode entry : list.isScalar() ? List.of(list) : list.list()) {
            if (entry.isMapping()) {
                remotes.add(remoteWithChap(entry, dataDir));
            } else if (entry.string().trim().startsWith("iscsi://")) {
                remotes.add(remote(entry, entry.string().trim(), null));
            } else {
                files.add(dataDir.resolve(entry.string()).normalize());
            }
        }
        return new Parsed(files, remotes);
    }

    private static RemoteMemberConfig remoteWithChap(YamlNode entry, Path dataDir) throws ConfigException {
        YamlNode urlNode = entry.required("url");
        YamlNode secretNode = entry.child("chap_secret_file");
        entry.rejectUnknownKeys();
        Path secretFile = secretNode == null ? null : dataDir.resolve(secretNode.string()).normalize();
        RemoteMemberConfig remote = remote(urlNode, urlNode.string().trim(), secretFile);
        if (secretFile != null) {
            try {
                Arrays.fill(ChapSecretFile.read(secretFile), '\0'); // read now only to refuse a bad file at start
            } catch (IOException e) {
                throw secretNode.error(e.getMessage());
            }
        }
        return remote;
    }

    private static RemoteMemberConfig remote(YamlNode node, String text, Path secretFile) throws ConfigException {
        try {
            return RemoteMemberConfig.of(text, secretFile);
        } catch (IllegalArgumentException e) {
            throw node.error(e.getMessage());
        }
    }

    /** The array's remote members, spares and their {@code remote_*} settings. */
    static RemoteMembersConfig remote(YamlNode array, Parsed members, Parsed spares) throws ConfigException {
        RemoteMemberOptions d = RemoteMemberOptions.defaults();
        YamlNode connections = array.child("remote_connections");
        YamlNode depth = array.child("remote_queue_depth");
        YamlNode retry = array.child("remote_retry_timeout_seconds");
        YamlNode command = array.child("remote_command_timeout_seconds");
        YamlNode headerDigest = array.child("remote_header_digest");
        YamlNode dataDigest = array.child("remote_data_digest");
        YamlNode initiatorName = array.child("remote_initiator_name");
        RemoteMemberOptions options = new RemoteMemberOptions(
                connections == null ? d.connections() : (int) connections.integer(1, RemoteMemberOptions.MAX_CONNECTIONS),
                depth == null ? d.queueDepth() : (int) depth.integer(1, 1024),
                retry == null ? d.retryTimeout() : Duration.ofSeconds(retry.integer(0, 3600)),
                command == null ? d.commandTimeout() : Duration.ofSeconds(command.integer(1, 3600)),
                d.connectTimeout(), initiatorName(initiatorName, d.initiatorIqn()),
                digest(headerDigest, d.headerDigest()), digest(dataDigest, d.dataDigest()));
        List<RemoteMemberConfig> all = new ArrayList<>(members.remotes());
        all.addAll(spares.remotes());
        HashSet<String> seen = new HashSet<>();
        for (RemoteMemberConfig r : all) {
            if (!seen.add(r.url().toString())) {
                throw array.error("the remote LUN " + r.url() + " is listed twice");
            }
        }
        return new RemoteMembersConfig(List.copyOf(members.remotes()), List.copyOf(spares.remotes()), options);
    }

    private static String initiatorName(YamlNode node, String absent) throws ConfigException {
        if (node == null) {
            return absent;
        }
        try {
            return IscsiNames.require(node.string().trim(), "the initiator name");
        } catch (IllegalArgumentException e) {
            throw node.error(e.getMessage());
        }
    }

    private static Digest digest(YamlNode node, Digest absent) throws ConfigException {
        if (node == null) {
            return absent;
        }
        try {
            return Digest.parse(node.string());
        } catch (IllegalArgumentException e) {
            throw node.error(e.getMessage());
        }
    }
}
