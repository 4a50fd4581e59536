print("issuerd-bench: no benchmarks yet")
