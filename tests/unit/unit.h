/* unit.h — a tiny test harness: CHECK(cond, name) prints "ok - name" or
 * "not ok - name"; tests/run.sh counts the lines. */
#ifndef FB_UNIT_H
#define FB_UNIT_H
#include <stdio.h>
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) {                                                             \
            printf("ok - ");                                                    \
        } else {                                                                \
            printf("not ok - %s:%d: ", __FILE__, __LINE__);                     \
        }                                                                       \
        printf(__VA_ARGS__);                                                    \
        printf("\n");                                                           \
    } while (0)
void unit_core(void);
void unit_net(void);
void unit_udiff(void);
void unit_server(void);
void unit_oci(void);
void unit_commit(void);
void unit_safeopen(void);
void unit_rmtree(void);
void unit_json_text(void);
void unit_record(void);
void unit_secrets(void);
#endif
