#!/bin/bash
# timeout: 900
# tests/suites/oci-conformance.sh — the OCI conformance suite's tests that
# make check runs, against runc and fluebox (tests/oci/conformance.sh).
exec bash "$(dirname "$0")/../oci/conformance.sh"
