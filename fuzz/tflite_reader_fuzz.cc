// libFuzzer target: TFLite bytes through loading, greedy and diagonal planning, VerifyPlan and
// (for small models) execution compared bit for bit with an unplanned run (fuzz_entry.h).
// A broken invariant aborts, so libFuzzer records the input as a crash.
//
//   cmake -S . -B build/asan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DMEMFOLD_SANITIZE=ON
//   cmake --build build/asan --target tflite_reader_fuzz
//   build/asan/tflite_reader_fuzz -max_total_time=60 NEW_DIR tests/fuzz_corpus/tflite
#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const memfold::Result<memfold::fuzz::Stage> stage = memfold::fuzz::RunTfliteInput({data, size});
  if (!stage.ok()) {
    std::fprintf(stderr, "%s\n", stage.status().message().c_str());
    std::abort();
  }
  return 0;
}
