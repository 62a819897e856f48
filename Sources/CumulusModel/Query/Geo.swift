import Foundation

/// Distances on the Earth for `distanceToLocation:fromLocation:` and location sorts.
public enum Geo {
    /// Mean Earth radius, metres (the IUGG value).
    public static let earthRadius = 6_371_008.8

    /// Great-circle distance in metres between two locations (haversine), ignoring altitude.
    public static func distance(_ a: Location, _ b: Location) -> Double {
        let lat1 = a.latitude * .pi / 180
        let lat2 = b.latitude * .pi / 180
        let dLat = lat2 - lat1
        let dLon = (b.longitude - a.longitude) * .pi / 180
        let h = sin(dLat / 2) * sin(dLat / 2) + cos(lat1) * cos(lat2) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * earthRadius * asin(min(1, sqrt(h)))
    }

    /// Degrees of latitude spanned by `metres` (a safe bound for index range scans).
    public static func latitudeDegrees(forMetres metres: Double) -> Double {
        metres / (earthRadius * .pi / 180)
    }
}
