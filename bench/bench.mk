# bench/bench.mk — benchmarks. Included by the top-level Makefile
# (`-include bench/bench.mk`); paths are relative to the repository root.
#
#   make bench          full run: bench/results/latest.md and latest.json
#   make bench-quick    a short smoke run of the same (noisier numbers)
#   make bench-setup    install bubblewrap from Debian if it is missing
#   make bench-publish  copy the last full run into bench/RESULTS.* and docs/bench.md
#
# The harness is built with its own flags so that sanitizer builds of
# fluebox do not leak into it.

BENCH_DIR    := bench
BENCH_HARNESS := $(BENCH_DIR)/build/fbbench
BENCH_CC     ?= cc
BENCH_CFLAGS := -std=gnu11 -O2 -Wall -Wextra -Werror

.PHONY: bench bench-quick bench-setup bench-build

BENCH_TLS_SOURCE := $(BENCH_DIR)/build/fbtls-source

bench-build: $(BENCH_HARNESS) $(BENCH_TLS_SOURCE)

$(BENCH_HARNESS): $(BENCH_DIR)/fbbench.c
	@mkdir -p $(dir $@)
	$(BENCH_CC) $(BENCH_CFLAGS) -o $@ $< -lm

# The HTTPS server of the interception rows (bench/tls.py): OpenSSL's libssl,
# which fluebox links already (dynamically here: it is a test harness).
$(BENCH_TLS_SOURCE): $(BENCH_DIR)/tls_source.c
	@mkdir -p $(dir $@)
	$(BENCH_CC) $(BENCH_CFLAGS) -o $@ $< -lssl -lcrypto

bench-setup:
	@command -v bwrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y bubblewrap

bench: $(BENCH_HARNESS) $(BENCH_TLS_SOURCE) fluebox bench-setup
	$(BENCH_DIR)/run.sh

bench-quick: $(BENCH_HARNESS) $(BENCH_TLS_SOURCE) fluebox bench-setup
	$(BENCH_DIR)/run.sh --quick

# After a full `make bench`: bench/RESULTS.md and RESULTS.json become that
# run's snapshot, and docs/bench.md's tables are copied from it.
.PHONY: bench-publish
bench-publish:
	@test -s $(BENCH_DIR)/results/latest.md || { echo "bench-publish: run make bench first" >&2; exit 1; }
	@{ echo '<!-- Snapshot of bench/results/latest.md from the run described below (bench/results/ itself is not tracked). -->'; cat $(BENCH_DIR)/results/latest.md; } > $(BENCH_DIR)/RESULTS.md
	@cp $(BENCH_DIR)/results/latest.json $(BENCH_DIR)/RESULTS.json
	@python3 $(BENCH_DIR)/readme.py $(BENCH_DIR)/results/latest.md docs/bench.md
	@echo "bench-publish: bench/RESULTS.md, bench/RESULTS.json and docs/bench.md updated"
