# tinytorch.c: a flat, hand-written Makefile.
#   make                 build/libtinytorch.a, build/libtinytorch.so and the examples
#   make test            every Check suite, the README tour and the install test
#   make test SAN=1      the same under ASan + UBSan, in build-san/
#   make gradcheck       only the finite-difference gradient checks
#   make deps            install what is missing (check, libxxhash-dev, pkg-config, OpenMP)
#   make install         PREFIX=/usr/local DESTDIR= : headers, static and shared lib, .pc
# Options: OMP=0 (no OpenMP), SAN=1 (sanitizers), WERROR=1 (warnings are errors; CI),
#          ARCH=-march=native (the default binary runs on any x86-64; SIMD is picked at run time).

CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
OMP     ?= 1
SAN     ?= 0
WERROR  ?= 0
ARCH    ?=

WARN    := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS  := -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -g -fno-math-errno -fPIC $(ARCH) $(WARN)
LDLIBS  := -lxxhash -lm
BUILD   := build

ifeq ($(OMP),1)
CFLAGS  += -fopenmp
LDLIBS  += -fopenmp
endif
ifeq ($(SAN),1)
BUILD   := build-san
CFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDLIBS  += -fsanitize=address,undefined
endif
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif

# Expanded when used: `make test` installs Check first, then builds against it.
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null)

LIB_DIRS := tensor autograd nn optim data models/gpt
LIB_SRCS := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
HEADERS  := tinytorch.h $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.h) $(wildcard $(d)/*.def))
PUBLIC_HEADERS := $(filter-out %_internal.h tensor/kernels%.h,$(HEADERS))

TEST_UTIL   := $(BUILD)/obj/tests/test_util.o
SUITE_SRCS  := $(filter-out tests/test_gradcheck.c tests/test_util.c,$(wildcard tests/test_*.c))
SUITE_BINS  := $(SUITE_SRCS:tests/%.c=$(BUILD)/tests/%)
GC_SRCS     := tests/test_gradcheck.c $(wildcard tests/gc_*.c)
GC_OBJS     := $(GC_SRCS:%.c=$(BUILD)/obj/%.o)
EXAMPLES    := tour mlp_moons

.SECONDARY:
.PHONY: all lib examples run test test-run gradcheck deps install uninstall clean check-deps
all: lib examples
lib: $(BUILD)/libtinytorch.a $(BUILD)/libtinytorch.so
examples: $(EXAMPLES:%=$(BUILD)/%)

$(BUILD)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/tests/%.o: tests/%.c $(HEADERS) $(wildcard tests/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -I. -c $< -o $@

$(BUILD)/libtinytorch.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libtinytorch.so: $(LIB_OBJS)
	$(CC) -shared -o $@ $^ $(LDLIBS)

$(BUILD)/%: examples/%.c $(BUILD)/libtinytorch.a
	$(CC) $(CFLAGS) -I. $< -o $@ $(BUILD)/libtinytorch.a $(LDLIBS)

$(BUILD)/tests/test_%: $(BUILD)/obj/tests/test_%.o $(TEST_UTIL) $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD)/tests/gradcheck: $(GC_OBJS) $(TEST_UTIL) $(BUILD)/libtinytorch.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# Dependencies first (they decide the Check flags), then every suite runs to the end; the
# target fails if any failed.
test:
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory test-run

test-run: lib examples $(SUITE_BINS) $(BUILD)/tests/gradcheck
	@fail=0; \
	for t in $(SUITE_BINS) $(BUILD)/tests/gradcheck; do \
	    echo "== $$t"; $$t || fail=1; \
	done; \
	echo "== README tour"; sh tests/run_tour.sh $(BUILD) || fail=1; \
	echo "== mlp_moons"; sh tests/run_mlp_moons.sh $(BUILD) || fail=1; \
	if [ "$(SAN)" != 1 ]; then echo "== make install + pkg-config"; \
	    sh tests/install_test.sh "$(CC)" || fail=1; fi; \
	if [ $$fail = 0 ]; then echo "make test: all suites passed"; \
	else echo "make test: FAILED"; exit 1; fi

gradcheck:
	@$(MAKE) --no-print-directory check-deps
	@$(MAKE) --no-print-directory $(BUILD)/tests/gradcheck
	$(BUILD)/tests/gradcheck

# The main command: today the tour (the README's first program).
run: examples
	$(BUILD)/tour

deps:
	@sh scripts/deps.sh

check-deps:
	@sh scripts/deps.sh --quiet

# ---- install ----
INC_DIR := $(DESTDIR)$(PREFIX)/include/tinytorch
LIB_DIR := $(DESTDIR)$(PREFIX)/lib
install: lib
	install -d $(INC_DIR) $(LIB_DIR)/pkgconfig
	for h in $(PUBLIC_HEADERS); do install -D -m 644 $$h $(INC_DIR)/$$h; done
	install -m 644 $(BUILD)/libtinytorch.a $(LIB_DIR)/libtinytorch.a
	install -m 755 $(BUILD)/libtinytorch.so $(LIB_DIR)/libtinytorch.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBS@|$(LDLIBS)|' tinytorch.pc.in \
	    > $(LIB_DIR)/pkgconfig/tinytorch.pc

uninstall:
	rm -rf $(INC_DIR) $(LIB_DIR)/libtinytorch.a $(LIB_DIR)/libtinytorch.so \
	    $(LIB_DIR)/pkgconfig/tinytorch.pc

clean:
	rm -rf build build-san
