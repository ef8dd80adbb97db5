# Killed by a signal after two checks.
echo "ok - first"
echo "ok - second"
kill -KILL $$
