/// The gateway's version, shown by `gatewayctl version` and in device reports.
public enum GatewayVersion {
    public static let string = "0.3.0"
}
