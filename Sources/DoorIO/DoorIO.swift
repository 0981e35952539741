// DoorIO: see README.md "Layout".
