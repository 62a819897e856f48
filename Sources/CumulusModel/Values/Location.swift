/// A geographic location field value, mirroring CloudKit's Location dictionary
/// (`Docs/DATA-MODEL.md`, "Field values").
public struct Location: Sendable, Hashable, Codable {
    /// Degrees north, −90…90.
    public var latitude: Double
    /// Degrees east, −180…180.
    public var longitude: Double
    /// Metres above sea level.
    public var altitude: Double?
    /// Radius of uncertainty of latitude/longitude, in metres.
    public var horizontalAccuracy: Double?
    /// Uncertainty of the altitude, in metres.
    public var verticalAccuracy: Double?
    /// Direction of travel, degrees from true north.
    public var course: Double?
    /// Speed, metres per second.
    public var speed: Double?
    /// When the location was measured.
    public var timestamp: Timestamp?

    /// A location; only latitude and longitude are required.
    public init(
        latitude: Double,
        longitude: Double,
        altitude: Double? = nil,
        horizontalAccuracy: Double? = nil,
        verticalAccuracy: Double? = nil,
        course: Double? = nil,
        speed: Double? = nil,
        timestamp: Timestamp? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.course = course
        self.speed = speed
        self.timestamp = timestamp
    }

    /// Every double component, for checks that apply to all of them (finiteness).
    var doubleComponents: [(name: String, value: Double)] {
        var parts: [(String, Double)] = [("latitude", latitude), ("longitude", longitude)]
        if let altitude { parts.append(("altitude", altitude)) }
        if let horizontalAccuracy { parts.append(("horizontalAccuracy", horizontalAccuracy)) }
        if let verticalAccuracy { parts.append(("verticalAccuracy", verticalAccuracy)) }
        if let course { parts.append(("course", course)) }
        if let speed { parts.append(("speed", speed)) }
        return parts
    }
}
