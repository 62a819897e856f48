import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusReplication
import Foundation

/// The `/replication/*` endpoints of a node (Docs/HTTP-API.md "Replication"):
/// `hello`, `status` and `asset` on any node; `configuration`, `stream`, `snapshot`
/// and `ack` on a leader. Every one requires a session opened by `handshake`, in
/// which both nodes proved the replication secret without sending it
/// (``ReplicationHandshake``). Plain logic, like ``CloudKitAPI``;
/// ``CumulusHTTPServer`` streams the bodies.
public struct ReplicationEndpoints: Sendable {
    /// The leader side, on a leader.
    public let leader: ReplicationLeader?
    /// The follower loop, on a follower.
    public let follower: ReplicaFollower?
    /// The follower loop of the moment, on a cluster member (which follows one leader
    /// after another, and none while it leads).
    let currentFollower: (@Sendable () -> ReplicaFollower?)?
    /// On a cluster member: the cluster as it sees it.
    let clusterView: (@Sendable () -> ReplicationStatus.ClusterView)?
    /// The node, and its data directory.
    public let node: NodeState
    public var container: Container { node.container }
    /// The sessions this node answered handshakes for.
    public let sessions: ReplicationSessions

    /// Endpoints for `node`, guarded by `secret`. A cluster member passes its
    /// `currentFollower` instead of a fixed `follower`, a `leader` that serves only while
    /// the node leads, and its `clusterView` for the status.
    public init(
        node: NodeState, secret: String, leader: ReplicationLeader?, follower: ReplicaFollower?,
        currentFollower: (@Sendable () -> ReplicaFollower?)? = nil,
        clusterView: (@Sendable () -> ReplicationStatus.ClusterView)? = nil
    ) {
        self.node = node
        self.leader = leader
        self.follower = follower
        self.currentFollower = currentFollower
        self.clusterView = clusterView
        sessions = ReplicationSessions(secret: secret)
    }

    /// What an endpoint answers.
    public enum Answer: Sendable {
        /// A JSON body with a status.
        case json(Int, [UInt8])
        /// The replication stream.
        case stream(ReplicationStream)
        /// A snapshot file.
        case snapshot(SnapshotFile)
        /// Raw bytes.
        case bytes([UInt8])
    }

    /// Answers one request to `path` (after `/replication/`).
    public func answer(_ request: APIRequest) async -> Answer {
        let operation = request.path.split(separator: "/").dropFirst().joined(separator: "/")
        // A handshake by any method is answered, so a wrong one learns how to make it.
        if operation == ReplicationRoute.handshake.rawValue { return handshake(request) }
        switch sessions.admit(
            session: request.headers[ReplicationHandshake.sessionHeader], proof: request.headers[ReplicationHandshake.proofHeader])
        {
        case .admitted: break
        case .unknownSession:
            return Self.failure(
                ReplicationRoute.unknownSessionStatus,
                "no replication session, or one this node forgot: POST \(ReplicationRoute.handshake.target()) first")
        case .wrongProof:
            return Self.failure(
                ReplicationRoute.wrongProofStatus,
                "the session's proof is wrong: the caller does not hold this node's replication secret")
        }
        // Only a caller with a session learns which endpoints there are.
        guard let route = ReplicationRoute(rawValue: operation), route.method == request.method else {
            return Self.failure(ReplicationRoute.notFoundStatus, "no replication endpoint \(request.method) \(operation)")
        }
        do {
            let query = { (parameter: ReplicationRoute.Parameter) in request.query[parameter.rawValue] }
            switch route {
            case .hello:
                if let epoch = query(.epoch).flatMap(UInt64.init) {
                    leader?.observe(epoch: epoch, from: "follower \(query(.follower)?.prefix(128) ?? "?")")
                }
                return .json(200, Array(try JSONEncoder().encode(ReplicationHello.of(node))))
            case .status:
                return .json(200, Array(try JSONEncoder().encode(status())))
            case .asset:
                // Any node serves the files it holds: a follower fetches what a frame
                // or a snapshot refers to from whoever it follows.
                guard let checksum = query(.checksum).flatMap(AssetChecksum.init(hex:)) else {
                    return Self.failure(.protocolViolation("asset needs checksum (64 lower-case hex digits)"))
                }
                guard container.assets.contains(checksum) else {
                    return Self.failure(ReplicationRoute.notFoundStatus, "the asset \(checksum) is not stored on this node")
                }
                return .bytes(try container.assets.read(checksum))
            case .handshake, .configuration, .stream, .snapshot, .ack: break
            }
            guard let leader else {
                return Self.failure(.refused("this node is not a leader (\(node.role)); replicate from the leader"))
            }
            switch route {
            case .configuration:
                return .bytes(ReplicationMessage.configuration(try ReplicatedConfiguration.read(from: container.store.logEnvironment)).encoded())
            case .stream:
                guard let follower = query(.follower), !follower.isEmpty, follower.utf8.count <= 128,
                    let logID = query(.logID).flatMap(Hex.decode), logID.count == 16,
                    let epoch = query(.epoch).flatMap(UInt64.init), epoch >= 1,
                    let after = query(.after).flatMap(UInt64.init),
                    let hash = query(.hash).flatMap(Hex.decode), hash.count == Frame.hashLength
                else {
                    return Self.failure(
                        .protocolViolation("stream needs follower (≤ 128 bytes), logID (32 hex), epoch (≥ 1), after, hash (64 hex)"))
                }
                return .stream(try leader.openStream(
                    follower: follower, identity: LogStore.Identity(logID: logID, epoch: epoch), after: after, hash: hash))
            case .snapshot:
                return .snapshot(try await leader.snapshot())
            case .ack:
                guard let follower = query(.follower), !follower.isEmpty, follower.utf8.count <= 128,
                    let applied = query(.applied).flatMap(UInt64.init)
                else {
                    return Self.failure(.protocolViolation("ack needs follower (≤ 128 bytes) and applied"))
                }
                leader.report(follower: follower, applied: applied)
                return .json(200, Array(#"{"status":"ok"}"#.utf8))
            case .handshake, .hello, .status, .asset:
                return Self.failure(ReplicationRoute.notFoundStatus, "no replication endpoint \(request.method) \(request.path)")
            }
        } catch let error as ReplicationError {
            return Self.failure(error)
        } catch {
            return Self.failure(ReplicationRoute.failedStatus, "\(error)")
        }
    }

    /// This node's replication status.
    public func status() -> ReplicationStatus {
        var status: ReplicationStatus
        if let follower = follower ?? currentFollower?(), node.role != .leader {
            status = follower.status()
        } else if let leader, node.role == .leader {
            status = leader.status()
        } else {
            status = ReplicationStatus.of(node)
        }
        status.cluster = clusterView?()
        status.history = container.history.changes
        return status
    }

    /// `POST /replication/handshake?nonce=`: this node's nonce and proof
    /// (``ReplicationHandshake``), the only endpoint open without a session.
    func handshake(_ request: APIRequest) -> Answer {
        guard request.method == ReplicationRoute.handshake.method,
            let nonce = request.query[ReplicationRoute.Parameter.nonce.rawValue].flatMap(Hex.decode),
            let (answer, proof) = sessions.answer(initiatorNonce: nonce)
        else {
            return Self.failure(
                .protocolViolation("handshake is POST with nonce (\(ReplicationHandshake.nonceLength * 2) hex digits)"))
        }
        let body: JSONValue = ["nonce": .string(Hex.encode(answer)), "proof": .string(Hex.encode(proof))]
        return .json(200, (try? Array(body.serialized())) ?? [])
    }

    /// `error` answered with the status the protocol's table gives it
    /// (``ReplicationError/httpStatus``), which the follower reads back into the same case.
    static func failure(_ error: ReplicationError) -> Answer {
        failure(error.httpStatus, error.reason)
    }

    /// A refusal with CloudKit-style `serverErrorCode` (Cumulus's error codes on the wire, `Docs/HTTP-API.md`, "Errors").
    static func failure(_ status: Int, _ reason: String) -> Answer {
        let code: ServerErrorCode = switch status {
        case 400: .badRequest
        case 401: .authenticationRequired
        case 403: .accessDenied
        case 404: .notFound
        case 409: .conflict
        case 410, 412: .changeTokenExpired
        case 503: .tryAgainLater
        default: .internalError
        }
        let body: JSONValue = ["serverErrorCode": .string(code.name), "reason": .string(reason)]
        return .json(status, (try? Array(body.serialized())) ?? [])
    }
}
