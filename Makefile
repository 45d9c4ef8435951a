# The two commands people need: `make demo` and `make test`. Both install what is missing.
BUILD ?= build/release
JOBS  ?= $(shell nproc)
CMAKE_FLAGS ?= -DMEMFOLD_WERROR=ON

.PHONY: deps build test test-sanitize demo bench clean format

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The suite under AddressSanitizer and UndefinedBehaviorSanitizer, in a separate build (GCC's
# -Wmaybe-uninitialized misfires inside std::regex under the sanitizers, hence no -Werror).
test-sanitize: deps
	cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMFOLD_SANITIZE=ON \
	  -DMEMFOLD_BENCH=OFF -DMEMFOLD_WERROR=OFF
	cmake --build build/asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build/asan/memfold_tests

demo: build
	$(BUILD)/memfold compare zoo:mobilenet_v1 zoo:mobilenet_v2
	$(BUILD)/memfold run zoo:mobilenet_v2 --planner diagonal
	$(BUILD)/memfold train zoo:nmt,size=tiny --strategy echo --steps 3

bench: build
	$(BUILD)/planner_bench
	$(BUILD)/training_bench

format:
	clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf build
