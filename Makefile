# The two commands people need: `make demo` and `make test`. Both install what is missing.
BUILD ?= build/release
SANITIZE_BUILD ?= build/asan
JOBS  ?= $(shell nproc)
CMAKE_FLAGS ?= -DMEMFOLD_WERROR=ON
FUZZ_SECONDS ?= 60
# The Python package's virtual environment (python/requirements.txt), made from a Python 3.11:
# the CPU build of torch==2.13.0 is a cp311 wheel.
VENV ?= build/venv
PYTHON_BASE ?= python3.11
PYTHON := $(CURDIR)/$(VENV)/bin/python
FUZZ_CORPUS := tests/fuzz_corpus/tflite

# The sanitizer build is clang's (it compiles the suite in 60 % of GCC's time, and libFuzzer is
# clang's, so the fuzzer is built in the same tree, the library compiled once for both), at -O1
# with line tables, as ASan's authors advise (reports keep file and line).
SANITIZE_FLAGS := -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMEMFOLD_SANITIZE=ON -DMEMFOLD_BENCH=OFF -DMEMFOLD_WERROR=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only"
FUZZ_BUILD := $(SANITIZE_BUILD)
SANITIZE_ENV := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: deps venv build check test test-release test-sanitize fuzz fuzz-build fuzz-merge demo bench torch-bench device-table patch-table placement-table onnx-table training-table tflm-reference converter-models clean format format-check

deps:
	@scripts/install-deps.sh

$(VENV)/installed: python/requirements.txt
	$(PYTHON_BASE) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r python/requirements.txt
	touch $@

venv: $(VENV)/installed

$(BUILD)/build.ninja: CMakeLists.txt | deps venv
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE=$(PYTHON) \
	  $(CMAKE_FLAGS)

build: deps venv $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The inner loop: the Release build and its C++ tests but the slow ones (the Python suite, the
# device runs under QEMU, the full-size figures, the checker's mutation test), which `make
# test` runs. About a minute after a one-file change on 2 cores.
CHECK_SKIP = ^python\.|^DeviceRuns|^IssueModels|^device_library$$|$(SANITIZE_SKIP)
check: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -E '$(CHECK_SKIP)'

# Every test twice: the Release build, then the whole suite under AddressSanitizer and
# UndefinedBehaviorSanitizer (leak checking on) in a separate build.
test: test-release test-sanitize

test-release: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

$(SANITIZE_BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(SANITIZE_BUILD) -G Ninja $(SANITIZE_FLAGS)

test-sanitize: deps $(SANITIZE_BUILD)/build.ninja
	cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	$(SANITIZE_ENV) ctest --test-dir $(SANITIZE_BUILD) --output-on-failure -j $(JOBS) \
	  -E '$(SANITIZE_SKIP)'
# Left to the Release suite, where they run too: the figures (planner and split goldens,
# full-size MobileNet v2 streamed within MCUNetV2's peak, `best --stream-input` through the
# CLI), the mutation test of the checker (a test of the proof's power, not of memory safety:
# every other checked run exercises the checker under the sanitizers) and Inception v3, the
# zoo's largest model, whose operators every other zoo model runs there. Under the sanitizers
# they would only repeat, at a fifth of the speed, paths the smaller tests run (PatchSplit.*,
# StreamedInput.*, SplitForMemory.*, Best.* and InferenceModel.* on every other model). So would
# the MCUNet anchor's best plan (TflmAnchor: 90 s there; Int8Simd.* run its negative scales),
# and the msf-CNN curves (MsfCnnCurve; SegmentCurve.* and ChannelGroups run the same code),
# and MiniMalloc's challenging placement instances (ExactPlacer.* runs the solver there).
SANITIZE_FIGURES := ^PlannerGolden|^SplitGolden\.|^PatchBest\.|^Cli\.StreamInputPlansSmaller|^TflmAnchor\.|^Published/MsfCnnCurve\.|^Place\.MiniMallocs|^Place\.SameProblem
# Best on person_detect runs there twice already (Cli.BestPlannerReportsStepsAndRunsIdentically
# plans and runs it checked; FuzzReplay's report plans it), so its EveryModel/Best row is the
# Release suite's; so are the rows of vww_96_float and vww (TinyEngine's), the same
# architecture and kernels as vww_96_int8's row, which stays (50 s each there).
SANITIZE_SKIP := $(SANITIZE_FIGURES)|^PlanMutation\.CheckedExecutionCatches|inception_v3|^EveryModel/Best\..*/(person_detect|vww_96_float|vww)$$

# The model-file fuzzer (fuzz/tflite_reader_fuzz.cc; TFLite and ONNX seeds, the loader tells them
# apart by their bytes), built in the sanitizer tree, for FUZZ_SECONDS,
# starting from the checked-in corpus; new inputs go to $(FUZZ_BUILD)/corpus, a crash to
# $(FUZZ_BUILD)/crash-* and fails. Only the fuzzer is built (the seed writer,
# tflite_fuzz_seeds, when asked for).
fuzz-build: deps $(SANITIZE_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target tflite_reader_fuzz

fuzz: fuzz-build
	mkdir -p $(FUZZ_BUILD)/corpus
	$(FUZZ_BUILD)/tflite_reader_fuzz -max_total_time=$(FUZZ_SECONDS) -timeout=20 -rss_limit_mb=4096 \
	  -max_len=65536 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/ \
	  $(FUZZ_BUILD)/corpus $(FUZZ_CORPUS) tests/fuzz_corpus/onnx

# Folds what the fuzzer found into the checked-in corpus, minimised (-merge=1 keeps only inputs
# that add coverage).
fuzz-merge: fuzz-build
	rm -rf $(FUZZ_BUILD)/merged && mkdir -p $(FUZZ_BUILD)/merged $(FUZZ_BUILD)/corpus
	$(FUZZ_BUILD)/tflite_reader_fuzz -merge=1 $(FUZZ_BUILD)/merged $(FUZZ_CORPUS) $(FUZZ_BUILD)/corpus
	rm -f $(FUZZ_CORPUS)/* && cp $(FUZZ_BUILD)/merged/* $(FUZZ_CORPUS)/

demo: build
	$(BUILD)/memfold compare zoo:mobilenet_v1 zoo:mobilenet_v2
	$(BUILD)/memfold run zoo:mobilenet_v2 --planner diagonal
	$(BUILD)/memfold train zoo:nmt,size=tiny --strategy echo --steps 3
	cd python/bench && PYTHONPATH=$(CURDIR)/$(BUILD)/python $(PYTHON) -c "import zoo, memfold.torch \
	  as mt; model, inputs, _ = zoo.ZOO['resnet_cifar'](); print(mt.explain(model, *inputs))"

bench: build
	$(BUILD)/planner_bench
	$(BUILD)/training_bench
	$(BUILD)/schedule_bench

# memfold.torch against eager, AOT's default and min-cut partitions and PyTorch's memory
# budget on the user-style zoo, then memfold's budget choice against PyTorch's at equal memory
# (python/bench/measure.py; docs/torch.md).
TORCH_BUDGET_MODELS ?= gated_mlp nanogpt vit mlp_mixer bert_mini tcn lstm_tagger resnet_cifar
torch-bench: build
	cd python/bench && PYTHONPATH=$(CURDIR)/$(BUILD)/python $(PYTHON) measure.py
	cd python/bench && PYTHONPATH=$(CURDIR)/$(BUILD)/python $(PYTHON) measure.py \
	  $(TORCH_BUDGET_MODELS) --budgets 0.5,0.2

# memfold compile --run on the emulated Cortex-M4 for every shared model and the int8 zoo
# MobileNets under greedy, diagonal and best, beside TFLM's minimum arena (docs/device.md).
device-table: build
	/usr/bin/python3 scripts/device_table.py $(BUILD)/memfold $(BUILD)/device/table

# Full-size training per model: each strategy's first step checked, then three planned steps of
# the three strategies interleaved in one process; planned bytes beside the resident memory the
# OS measured, and the median step (scripts/training_table.py; about half an hour).
training-table: build
	scripts/training_table.py $(BUILD)/memfold

# tests/golden/tflm_reference.json from TFLM's Python interpreter (python/tests/test_tflm.py checks
# it is what TFLM prints).
tflm-reference: build
	PYTHONPATH=$(BUILD)/python $(PYTHON) scripts/tflm_reference.py

# tests/converter_models from the real TFLite converter (scripts/converter_models.py), in an
# environment of its own: `make test` reads the files, it does not need TensorFlow.
TF_VENV ?= build/tf-venv
$(TF_VENV)/installed: python/requirements-converter.txt
	$(PYTHON_BASE) -m venv $(TF_VENV)
	$(TF_VENV)/bin/pip install -q --disable-pip-version-check -r python/requirements-converter.txt
	touch $@

converter-models: $(TF_VENV)/installed
	TF_CPP_MIN_LOG_LEVEL=3 $(TF_VENV)/bin/python scripts/converter_models.py

# The patch-based inference figures (issue 17): every figure from `memfold plan --json`, into
# tests/golden/patch_figures.json and from it into docs/patches.md and the README's headline
# (python/tests/test_figures.py checks both).
patch-table: build
	$(PYTHON) scripts/patch_table.py $(BUILD)/memfold

# docs/onnx.md's table: memfold's arenas for the PyTorch-exported ONNX models (float32 and int8)
# beside ONNX Runtime's heap per run, measured by scripts/heap_peak.c (~1 min).
onnx-table: build
	PYTHONPATH=$(BUILD)/python $(PYTHON) scripts/onnx_table.py

# `memfold place` on MiniMalloc's challenging instances, every shared model's exported problem
# and synthetic training steps of up to 60,000 buffers (scripts/placement_table.py, ~2 min):
# the tables of docs/placement.md. MINIMALLOC=path/to/minimalloc (scripts/build_minimalloc.sh)
# runs MiniMalloc beside it on the challenging and generated problems (~5 min more).
placement-table: build
	/usr/bin/python3 scripts/placement_table.py $(BUILD)/memfold

format:
	clang-format -i $$(git ls-files '*.h' '*.cc')

# CI: every C++ file as clang-format (the repository's .clang-format) would write it.
format-check: deps
	clang-format --dry-run --Werror $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf build
