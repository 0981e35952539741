// PN532Emulator: see README.md "Layout".
