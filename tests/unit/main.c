/* Unit test entry point: runs each group, then prints the end marker
 * tests/run.sh needs to know the program ran to its end (tests/tap.sh). */
#include "unit.h"

int main(void)
{
    unit_core();
    unit_net();
    unit_udiff();
    unit_server();
    unit_oci();
    unit_commit();
    unit_safeopen();
    unit_rmtree();
    unit_json_text();
    unit_record();
    unit_secrets();
    printf("# end of suite\n");
    return 0;
}
