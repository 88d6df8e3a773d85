# plateau: the top-level entry points.  The build itself is meson + ninja.
#
#   make          build build/plateau
#   make test     unit and CLI tests, then again under ASan+UBSan
#   make demo     profile the example program and draw its flame graph
#   make bench    plateau against FlameGraph (and inferno) side by side
#   make fuzz     build the libFuzzer targets and run each for FUZZ_SECONDS

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
NINJA      ?= ninja
JOBS       ?= 2

.PHONY: all deps build build-asan test test-unit test-asan demo bench fuzz clean format

all: build

deps:
	@scripts/deps.sh

$(BUILD)/build.ninja: | deps
	meson setup $(BUILD) --buildtype=debugoptimized

build: deps $(BUILD)/build.ninja
	@$(NINJA) -C $(BUILD) -j $(JOBS)

$(ASAN_BUILD)/build.ninja: | deps
	meson setup $(ASAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false

build-asan: deps $(ASAN_BUILD)/build.ninja
	@$(NINJA) -C $(ASAN_BUILD) -j $(JOBS)

# Every suite, first on the normal build, then under ASan+UBSan; the last
# line is the total "N passed, N failed".
test: build build-asan
	@tests/run.sh $(BUILD) $(ASAN_BUILD)

test-unit: build
	@tests/run.sh $(BUILD)

test-asan: build-asan
	@tests/run.sh $(ASAN_BUILD)

demo: build
	@scripts/demo.sh $(BUILD)

bench: build
	@bench/run.sh $(BUILD)

$(FUZZ_BUILD)/build.ninja: | deps
	CC=clang meson setup $(FUZZ_BUILD) --buildtype=debugoptimized -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false

fuzz: deps $(FUZZ_BUILD)/build.ninja
	@$(NINJA) -C $(FUZZ_BUILD) -j $(JOBS)
	@fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
