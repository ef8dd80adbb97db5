/* Unit test entry point: runs each group. */
#include "unit.h"

int main(void)
{
    unit_core();
    unit_net();
    unit_udiff();
    unit_server();
    return 0;
}
