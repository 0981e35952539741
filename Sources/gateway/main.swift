import GatewayCLI

Entry.main()
