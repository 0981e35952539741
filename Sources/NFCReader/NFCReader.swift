// NFCReader: see README.md "Layout".
