// GatewayMQTT: the MQTT adapter (libmosquitto), topics, durable outbox. See README.md "Layout".
