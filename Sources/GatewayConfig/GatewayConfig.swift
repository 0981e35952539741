// GatewayConfig: see README.md "Layout".
