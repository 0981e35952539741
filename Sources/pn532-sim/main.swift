import PN532Emulator
print("pn532-sim: not implemented yet")
