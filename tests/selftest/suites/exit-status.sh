# Prints its end marker but exits 3 with no failing check.
echo "ok - first"
echo "ok - second"
echo "# end of suite"
exit 3
