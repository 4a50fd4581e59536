// libFuzzer's driver, from the toolchain's compiler-rt (libclang_rt.fuzzer), which
// `-sanitize=fuzzer` links. Header only: nothing is linked unless issuerd-fuzz is built for
// fuzzing (scripts/fuzz-parsers), and only then is the function called.
#include <stddef.h>
#include <stdint.h>

/// Runs libFuzzer with the command line `argc`/`argv` (its flags and corpus folders), calling
/// `callback` with each input; returns the process's exit status.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
