// GatewayStore: see README.md "Layout".
