// Writes the fuzzer's seed files (seed_graphs.h) into a directory:
//   build/asan/tflite_fuzz_seeds OUT_DIR [SHARED_DIR (default ../shared)]
// The checked-in corpus (tests/fuzz_corpus/tflite) is these seeds merged with what the fuzzer
// found (-merge=1).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "fuzz/seed_graphs.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: tflite_fuzz_seeds OUT_DIR [SHARED_DIR]\n";
    return 2;
  }
  const std::filesystem::path out = argv[1];
  const auto seeds = memfold::fuzz::SeedFiles(argc == 3 ? argv[2] : "../shared");
  if (!seeds.ok()) {
    std::cerr << "tflite_fuzz_seeds: " << seeds.status().message() << "\n";
    return 1;
  }
  std::filesystem::create_directories(out);
  for (const auto& [name, bytes] : *seeds) {
    std::ofstream file(out / name, std::ios::binary);
    file.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    if (!file) {
      std::cerr << "tflite_fuzz_seeds: cannot write " << (out / name).string() << "\n";
      return 1;
    }
    std::cout << name << " " << bytes.size() << " bytes\n";
  }
  return 0;
}
