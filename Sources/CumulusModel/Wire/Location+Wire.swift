extension Location {
    /// The location dictionary; optional members appear only when set, the
    /// timestamp in milliseconds.
    public var wireJSON: JSONValue {
        var members: [String: JSONValue] = ["latitude": .double(latitude), "longitude": .double(longitude)]
        if let altitude { members["altitude"] = .double(altitude) }
        if let horizontalAccuracy { members["horizontalAccuracy"] = .double(horizontalAccuracy) }
        if let verticalAccuracy { members["verticalAccuracy"] = .double(verticalAccuracy) }
        if let course { members["course"] = .double(course) }
        if let speed { members["speed"] = .double(speed) }
        if let timestamp { members["timestamp"] = .int(timestamp.millisecondsSince1970) }
        return .object(members)
    }

    /// Reads a location dictionary: `latitude` and `longitude` are required numbers.
    public init(wire json: JSONValue, field: String) throws {
        guard case .object(let members) = json else {
            throw CumulusError.wire(field, "a location must be an object, got \(json.kindName)")
        }
        func number(_ name: String) throws -> Double? {
            guard let member = members[name], member != .null else { return nil }
            guard let value = member.doubleValue else {
                throw CumulusError.wire(field, "a location's \(name) must be a number, got \(member.kindName)")
            }
            return value
        }
        guard let latitude = try number("latitude"), let longitude = try number("longitude") else {
            throw CumulusError.wire(field, "a location needs numeric latitude and longitude")
        }
        var timestamp: Timestamp?
        if let ms = try number("timestamp") {
            timestamp = try FieldValue.timestamp(fromMilliseconds: ms, field: field)
        }
        self.init(
            latitude: latitude, longitude: longitude, altitude: try number("altitude"),
            horizontalAccuracy: try number("horizontalAccuracy"), verticalAccuracy: try number("verticalAccuracy"),
            course: try number("course"), speed: try number("speed"), timestamp: timestamp)
    }
}
