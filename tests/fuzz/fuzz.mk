# tests/fuzz/fuzz.mk — libFuzzer target for the profile parser and the seccomp
# filters libseccomp makes of it (tests/fuzz/profile_fuzz.c). Included by the
# top-level Makefile.
#
#   make fuzz                 fuzz for FUZZ_TIME seconds (default 600); new
#                             inputs go to build/fuzz-corpus, crashes to
#                             build/fuzz-crash-*
#   make build/fuzz-profile   just build it (tests/suites/fuzz-profile.sh runs
#                             it briefly inside make check)
# Needs clang and its fuzzer runtime: sh scripts/deps.sh fuzz.

FUZZ_CC    ?= clang
FUZZ_FLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=undefined
FUZZ_SRC   := $(filter-out src/main.c,$(SRC)) build/profiles.c build/version.c
FUZZ_TIME  ?= 600

build/fuzz-profile: tests/fuzz/profile_fuzz.c tests/fuzz/bpf_run.h $(FUZZ_SRC) $(wildcard src/*/*.h)
	@mkdir -p build
	$(FUZZ_CC) $(CPPFLAGS) -iquote tests/fuzz $(FUZZ_FLAGS) -o $@ tests/fuzz/profile_fuzz.c \
	    $(FUZZ_SRC) $(LIBS)

fuzz: build/fuzz-profile
	@mkdir -p build/fuzz-corpus
	build/fuzz-profile -max_total_time=$(FUZZ_TIME) -timeout=20 -dict=tests/fuzz/profile.dict \
	    -artifact_prefix=build/fuzz-crash- build/fuzz-corpus tests/fuzz/corpus

# The wire protocol's parser and encoders (tests/fuzz/proto_fuzz.c, src/server/proto.c;
# tests/suites/fuzz-proto.sh runs it briefly in make check).
build/fuzz-proto: tests/fuzz/proto_fuzz.c src/server/proto.c src/server/proto.h src/server/methods.h src/base/bytes.c src/base/bytes.h src/base/userdir.c src/base/userdir.h src/base/util.c src/base/fb.h
	@mkdir -p build
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -o $@ tests/fuzz/proto_fuzz.c src/server/proto.c src/base/bytes.c src/base/userdir.c src/base/util.c -ljansson

fuzz-proto: build/fuzz-proto
	@mkdir -p build/fuzz-corpus-proto
	build/fuzz-proto -max_total_time=$(FUZZ_TIME) -timeout=20 -dict=tests/fuzz/proto.dict \
	    -artifact_prefix=build/fuzz-crash-proto- build/fuzz-corpus-proto tests/fuzz/corpus-proto

# The parsers of what a sandbox sends the supervisor: TLS/HTTP first bytes,
# every request of a plain-HTTP connection, DNS (tests/fuzz/net_fuzz.c;
# tests/suites/fuzz-net.sh runs it briefly in make check).
build/fuzz-net: tests/fuzz/net_fuzz.c src/egress/sniff.c src/egress/sniff.h src/egress/dns_wire.c src/egress/dns_wire.h src/base/fb.h
	@mkdir -p build
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -o $@ tests/fuzz/net_fuzz.c src/egress/sniff.c src/egress/dns_wire.c

fuzz-net: build/fuzz-net
	@mkdir -p build/fuzz-corpus-net
	build/fuzz-net -max_total_time=$(FUZZ_TIME) -timeout=20 -dict=tests/fuzz/net.dict \
	    -artifact_prefix=build/fuzz-crash-net- build/fuzz-corpus-net tests/fuzz/corpus-net
