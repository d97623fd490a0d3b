import EvidenceCLI

// Everything `evidence` does is in EvidenceCLI, so the CLI tests can run commands in-process.
await EvidenceCLI.main()
