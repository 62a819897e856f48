/// How many bytes of uploads one user, and one container, may take within a window
/// (issue 40); `Docs/SECURITY.md` lists them. Past either, `quotaExceeded`.
public struct UploadQuota: Sendable, Equatable {
    /// Bytes one user may upload in one container within ``window``.
    public var bytesPerUser: Int64 = 1_000_000_000
    /// Bytes all users of one container may upload within ``window``.
    public var bytesPerContainer: Int64 = 10_000_000_000
    /// The window: the grace an unreferenced upload is kept (``AssetCollector/defaultGrace``).
    public var window: Duration = AssetCollector.defaultGrace

    /// The defaults.
    public init() {}
}
