import CumulusLog
import CumulusModel
import CumulusViews
import Foundation

/// The database's side of the asset flow (`Docs/HTTP-API.md`, "Assets"): upload URLs for
/// record fields, and the check of what a save's assets claim.
extension Database {
    /// One field an upload URL is asked for.
    public struct AssetField: Sendable, Hashable {
        /// The record's name, if the client gave one.
        public var recordName: String?
        /// The record's type.
        public var recordType: String
        /// The field the asset goes in.
        public var fieldName: String

        /// A field.
        public init(recordName: String?, recordType: String, fieldName: String) {
            self.recordName = recordName
            self.recordType = recordType
            self.fieldName = fieldName
        }
    }

    /// The sealed text of an upload URL per field, in order: `actor` may store one
    /// file for it, within ``AssetUploadTicket/lifetime``. Needs a user who may write
    /// here; names are checked as a save would check them, and in production the field
    /// must be declared an asset (development learns fields when the record is saved).
    public func uploadTickets(for fields: [AssetField], in zoneID: ZoneID, as actor: String?) throws -> [String] {
        let actor = try AccessPolicy.checkWrite(id, actor: actor)
        // Only the leader takes uploads; its URL would not work here.
        try container.requireLeaderForUploads()
        let zoneID = Normalizer(database: id).zone(zoneID)
        try NameRules.checkZoneID(zoneID)
        let schema = try container.store.environment.read { try container.views.schema(SchemaID(id), in: $0) }
        let expires = Timestamp.now().adding(AssetUploadTicket.lifetime)
        return try fields.map { field in
            if let name = field.recordName { try NameRules.checkRecordName(name) }
            try NameRules.checkRecordType(field.recordType)
            try NameRules.checkFieldName(field.fieldName)
            if !schema.growsJustInTime {
                guard let declared = schema.field(field.fieldName, of: field.recordType),
                    declared.type.primitive == .asset, !declared.type.isEncrypted
                else {
                    throw CumulusError(
                        .invalidArguments,
                        "'\(field.fieldName)' is not an ASSET field of record type '\(field.recordType)' in the production schema",
                        field: field.fieldName)
                }
            }
            return AssetUploadTicket(
                database: id, user: actor, zoneID: zoneID, recordName: field.recordName, recordType: field.recordType,
                fieldName: field.fieldName, expires: expires
            ).sealed(secret: container.secret)
        }
    }

    /// Stores `bytes` as `actor`'s asset (the Swift API's upload, without URLs):
    /// the value to put in a field of a record saved here, receipt included.
    public func storeAsset(_ bytes: [UInt8], limit: Int64 = Container.defaultMaxAssetBytes, as actor: String?) async throws
        -> Asset
    {
        // No field named: the caller puts the asset where it likes, and the save checks
        // it against the schema then.
        let ticket = AssetUploadTicket(
            database: id, user: try AccessPolicy.checkWrite(id, actor: actor), zoneID: .default, recordName: nil,
            recordType: "", fieldName: "", expires: Timestamp.now().adding(AssetUploadTicket.lifetime)
        ).sealed(secret: container.secret)
        var pending: [UInt8]? = bytes
        let (stored, receipt, _) = try await container.receiveAsset(ticket: ticket, limit: limit, oneUse: false) {
            defer { pending = nil }
            return pending
        }
        return Asset(fileChecksum: stored.checksum.hex, size: stored.size, referenceChecksum: stored.checksum.hex, receipt: receipt)
    }

    /// Checks the receipts of `record`'s assets (a save by `actor`) and stores each
    /// asset without its receipt or wrapping key: receipts are one-time proofs, and
    /// files are not encrypted. Returns the files the receipts proved; an asset
    /// without one must already be in the record's stored version, which the planner
    /// checks. `invalidArguments` for a receipt that is damaged, forged, expired,
    /// another user's or database's, or for another file; `unknownItem` for a valid
    /// receipt whose file this node no longer holds.
    func proveAssets(in record: inout Record, as actor: String) throws -> Set<AssetChecksum> {
        var holding: [String] = []
        record.forEachField(where: { _ in true }) { key, value in
            var holds = false
            value.forEachAsset { _ in holds = true }
            if holds { holding.append(key) }
        }
        guard !holding.isEmpty else { return [] }
        var proven = Set<AssetChecksum>()
        let now = Timestamp.now()
        func prove(_ asset: Asset, field: String) throws -> FieldValue {
            var stored = Asset(fileChecksum: asset.fileChecksum, size: asset.size, referenceChecksum: asset.referenceChecksum)
            guard let text = asset.receipt else { return .asset(stored) }
            let receipt: AssetReceipt
            do {
                receipt = try AssetReceipt.open(text, secret: container.secret, now: now)
            } catch let error as CumulusError {
                throw CumulusError(error.code, error.message, recordID: record.recordID, field: field)
            }
            guard receipt.user == actor, receipt.database == id else {
                throw CumulusError(
                    .invalidArguments, "the asset receipt was issued to another user or for another database; upload the file again",
                    recordID: record.recordID, field: field)
            }
            guard receipt.checksum.hex == asset.fileChecksum, receipt.size == asset.size else {
                throw CumulusError(
                    .invalidArguments,
                    "the asset's fileChecksum and size must be those of its receipt (\(receipt.checksum), \(receipt.size) bytes)",
                    recordID: record.recordID, field: field)
            }
            guard container.assets.contains(receipt.checksum) else {
                throw CumulusError(
                    .unknownItem, "the asset file \(receipt.checksum) is not stored on this server; upload it again",
                    recordID: record.recordID, field: field)
            }
            proven.insert(receipt.checksum)
            stored.fileChecksum = receipt.checksum.hex
            return .asset(stored)
        }
        for key in holding {
            guard let value = record[key] else { continue }
            switch value {
            case .asset(let asset):
                record[key] = try prove(asset, field: key)
            case .list(let items):
                record[key] = .list(try items.map { item in
                    if case .asset(let asset) = item { return try prove(asset, field: key) }
                    return item
                })
            default:
                break
            }
        }
        return proven
    }
}

extension ModifyPlanner {
    /// Refuses an asset of `record` that neither a receipt of this operation proved
    /// (`proven`) nor the record's stored version (`existing`) already holds, with the
    /// same size: a client may re-send the assets it fetched, but may not name a file
    /// it never uploaded.
    static func checkAssets(_ record: Record, existing: Record?, proven: Set<AssetChecksum>) throws {
        var unproven: [Asset] = []
        record.forEachFieldAsset { asset in
            if AssetChecksum(hex: asset.fileChecksum).map(proven.contains) != true { unproven.append(asset) }
        }
        guard !unproven.isEmpty else { return }
        struct Held: Hashable {
            let checksum: String
            let size: Int64
        }
        var held = Set<Held>()
        existing?.forEachFieldAsset { held.insert(Held(checksum: $0.fileChecksum, size: $0.size)) }
        for asset in unproven where !held.contains(Held(checksum: asset.fileChecksum, size: asset.size)) {
            throw CumulusError(
                .invalidArguments,
                "the asset \(asset.fileChecksum.prefix(80)) has no receipt and is not in the record's stored version: "
                    + "upload it (assets/upload) and save the record with the receipt the upload answered",
                recordID: record.recordID)
        }
    }
}
