# Runs another program as part of it (sub_suite); that program prints one
# result of the three it planned.
. "$ROOT/tests/lib.sh"
sub_suite "inner program" 30 bash -c 'echo "1..3"; echo "ok - inner first"; kill -TERM $$'
