import DoorCore
