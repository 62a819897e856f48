import ArgumentParser
import CumulusReplication

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
    }
}
