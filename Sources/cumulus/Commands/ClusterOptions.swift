import ArgumentParser
import CumulusReplication
import CumulusStorage
import Foundation

/// `cumulus serve`'s options for joining an etcd-coordinated cluster (automatic
/// failover, `Docs/OPERATIONS.md`).
struct ClusterOptions: ParsableArguments {
    @Option(help: "etcd's client URLs, comma-separated: join the cluster they coordinate (automatic failover).")
    var etcd: String?

    @Option(help: "The cluster's name: its keys in etcd live under /cumulus/NAME/ (letters, digits, . _ -).")
    var cluster: String?

    @Option(help: "This node's name in the cluster (letters, digits, . _ -; unique in the cluster).")
    var node: String?

    @Option(help: "The URL other nodes and clients reach this node at (e.g. http://10.0.0.2:8765).")
    var advertise: String?

    @Option(help: "Seconds a leader's lease lasts without renewal; a dead leader is replaced after about this long.")
    var leaseTTL: Int = 5

    @Option(help: "The etcd user to authenticate as (etcd's `auth enable`); its password from --etcd-password-file.")
    var etcdUser: String?

    @Option(
        help: """
            A file holding the etcd user's password (keep it mode 0600). Or set \(EtcdAccess.password.environmentVariable); \
            never on the command line.
            """)
    var etcdPasswordFile: String?

    @Option(help: "A PEM file of the CA that signed etcd's certificate (https:// endpoints); default: the system's.")
    var etcdCAFile: String?

    @Option(help: "A PEM client certificate to present to etcd (etcd's --client-cert-auth); needs --etcd-key-file.")
    var etcdCertFile: String?

    @Option(help: "The PEM private key of --etcd-cert-file (keep it mode 0600).")
    var etcdKeyFile: String?

    /// Whether the node joins a cluster.
    var isSet: Bool { etcd != nil }

    /// The etcd endpoints.
    var endpoints: [String] { (etcd ?? "").split(separator: ",").map { String($0) }.filter { !$0.isEmpty } }

    func validate() throws {
        guard isSet else {
            if cluster != nil || node != nil || advertise != nil {
                throw ValidationError("--cluster, --node and --advertise belong with --etcd")
            }
            return
        }
        guard !endpoints.isEmpty, endpoints.allSatisfy({ $0.hasPrefix("http://") || $0.hasPrefix("https://") }) else {
            throw ValidationError("--etcd takes etcd client URLs, e.g. http://127.0.0.1:2379,http://10.0.0.3:2379")
        }
        guard let cluster, ClusterKeys.isValidName(cluster) else {
            throw ValidationError("--etcd needs --cluster NAME (1–64 letters, digits, . _ -)")
        }
        guard let node, ClusterKeys.isValidName(node) else {
            throw ValidationError("--etcd needs --node NAME (1–64 letters, digits, . _ -), unique in the cluster")
        }
        guard let advertise, advertise.hasPrefix("http://") || advertise.hasPrefix("https://") else {
            throw ValidationError("--etcd needs --advertise URL: where other nodes and clients reach this one")
        }
        guard (2...300).contains(leaseTTL) else { throw ValidationError("--lease-ttl is between 2 and 300 seconds") }
        guard (etcdCertFile == nil) == (etcdKeyFile == nil) else {
            throw ValidationError("--etcd-cert-file and --etcd-key-file go together")
        }
        if etcdCAFile != nil || etcdCertFile != nil, !endpoints.allSatisfy({ $0.hasPrefix("https://") }) {
            throw ValidationError("--etcd-ca-file and --etcd-cert-file are for https:// etcd endpoints")
        }
        if etcdUser == nil, etcdPasswordFile != nil {
            throw ValidationError("--etcd-password-file needs --etcd-user")
        }
    }

    /// How to reach etcd: the user and its password (from the file or the environment),
    /// and TLS. A password without a user, or a user without one, is a `ValidationError`.
    func access(warn: Bool) throws -> EtcdAccess {
        var access = EtcdAccess.plain
        let password = try EtcdAccess.password.resolveForCommand(file: etcdPasswordFile, warn: warn)
        if let etcdUser {
            guard let password else {
                throw ValidationError(
                    "--etcd-user needs its password: --etcd-password-file or \(EtcdAccess.password.environmentVariable)")
            }
            access.credentials = (etcdUser, password)
        }
        if etcdCAFile != nil || etcdCertFile != nil {
            do {
                access.tls = try EtcdAccess.tls(caFile: etcdCAFile, certificateFile: etcdCertFile, keyFile: etcdKeyFile)
            } catch {
                throw ValidationError("\(error)")
            }
        }
        if warn, let etcdKeyFile {
            for finding in FilePermissions.looserThanPrivate(file: etcdKeyFile) {
                FileHandle.standardError.write(Data("cumulus: warning: \(finding)\n".utf8))
            }
        }
        return access
    }
}
