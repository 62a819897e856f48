/// A field value naming a stored file (`Docs/DATA-MODEL.md`, "Field values"; the model carries
/// its receipt so records holding one round-trip).
public struct Asset: Sendable, Hashable, Codable {
    /// Checksum of the file's bytes, as issued by the upload.
    public var fileChecksum: String
    /// The file's size in bytes.
    public var size: Int64
    /// Checksum of the reference, if the upload returned one.
    public var referenceChecksum: String?
    /// Key the file is wrapped with, if encrypted.
    public var wrappingKey: String?
    /// Upload receipt, proving the bytes were stored.
    public var receipt: String?

    /// An asset value.
    public init(
        fileChecksum: String,
        size: Int64,
        referenceChecksum: String? = nil,
        wrappingKey: String? = nil,
        receipt: String? = nil
    ) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.referenceChecksum = referenceChecksum
        self.wrappingKey = wrappingKey
        self.receipt = receipt
    }
}
