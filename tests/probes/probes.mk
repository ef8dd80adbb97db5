# tests/probes/probes.mk — escape probes. Included by the top-level Makefile
# (`-include tests/probes/probes.mk`); paths are relative to the repository
# root. Also works on its own: `make -f tests/probes/probes.mk redteam`.
#
#   make probes     build the static probe programs into tests/probes/build/
#   make redteam    build them and run tests/probes/run.sh against ./fluebox
#                   (every probe under each built-in profile and with no
#                   sandbox; as root also as the user fbtest when it exists)
#   make redteam-report  the same, also writing tests/probes/results.md (the
#                   tables the README shows) and adding a bubblewrap column
#
# The probes are built with their own flags, not the project's CFLAGS: they
# must be static (the sandbox has no loader of our choosing) and sanitizer
# builds of fluebox must not leak -fsanitize into them.

PROBES_DIR    := tests/probes
PROBES_BUILD  := $(PROBES_DIR)/build
PROBES_SRCS   := $(sort $(wildcard $(PROBES_DIR)/*.c))
PROBES_BINS   := $(patsubst $(PROBES_DIR)/%.c,$(PROBES_BUILD)/%,$(PROBES_SRCS))
PROBES_HELPER := $(PROBES_BUILD)/helper/fbhost
PROBES_CC     ?= cc
PROBES_CFLAGS := -std=gnu11 -O2 -Wall -Wextra -Werror -static
# Linking getaddrinfo statically draws a linker warning about NSS; harmless
# here (dns and files are built into glibc >= 2.34), so keep it quiet.
PROBES_LDFLAGS := -Wl,--no-warnings

.PHONY: probes redteam redteam-report probes-clean

probes: $(PROBES_BINS) $(PROBES_HELPER)

$(PROBES_BUILD)/%: $(PROBES_DIR)/%.c $(PROBES_DIR)/probe.h
	@mkdir -p $(dir $@)
	$(PROBES_CC) $(PROBES_CFLAGS) -o $@ $< $(PROBES_LDFLAGS)

$(PROBES_HELPER): $(PROBES_DIR)/helper/fbhost.c
	@mkdir -p $(dir $@)
	$(PROBES_CC) $(PROBES_CFLAGS) -o $@ $<

redteam: probes fluebox
	$(PROBES_DIR)/run.sh

redteam-report: probes fluebox
	$(PROBES_DIR)/run.sh --bwrap --markdown $(PROBES_DIR)/results.md

probes-clean:
	rm -rf $(PROBES_BUILD)
