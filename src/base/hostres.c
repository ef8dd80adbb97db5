/* hostres.c — getaddrinfo() in worker threads (see hostres.h).
 *
 * The shared state is reference-counted: the owner holds one reference and
 * each worker one, so a worker that outlives hostres_free() (stuck in a slow
 * lookup) still has valid memory and frees it when it leaves. */
#include "hostres.h"

#include <netdb.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

#define WORKERS 4

struct job {
    struct job *next;
    char *name;
    struct hostres_result res;
};

struct hostres {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *todo, **todo_tail;
    struct job *done, **done_tail;
    int refs;
    bool stop;
    int evfd;
    pthread_t tid[WORKERS];
    int nthreads, idle;
};

static void unref_locked(struct hostres *r) /* drops r->mu */
{
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (!last)
        return;
    for (struct job *j = r->todo, *n; j; j = n) {
        n = j->next;
        free(j->name);
        free(j);
    }
    for (struct job *j = r->done, *n; j; j = n) {
        n = j->next;
        free(j->name);
        free(j);
    }
    close(r->evfd);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

static void lookup(struct job *j)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_ADDRCONFIG};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(j->name, NULL, &hints, &ai);
    j->res.gai_err = rc;
    j->res.sys_err = rc == EAI_SYSTEM ? errno : 0;
    for (struct addrinfo *a = ai; a && j->res.naddr < HOSTRES_MAX_ADDRS; a = a->ai_next) {
        if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
            a->ai_addrlen > sizeof(struct sockaddr_storage))
            continue;
        memcpy(&j->res.addr[j->res.naddr], a->ai_addr, a->ai_addrlen);
        j->res.addrlen[j->res.naddr++] = a->ai_addrlen;
    }
    if (ai)
        freeaddrinfo(ai);
}

static void *worker(void *arg)
{
    struct hostres *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->todo && !r->stop) {
            r->idle++;
            pthread_cond_wait(&r->cv, &r->mu);
            r->idle--;
        }
        if (r->stop)
            break;
        struct job *j = r->todo;
        r->todo = j->next;
        if (!r->todo)
            r->todo_tail = &r->todo;
        pthread_mutex_unlock(&r->mu);
        lookup(j);
        pthread_mutex_lock(&r->mu);
        if (r->stop) {
            free(j->name);
            free(j);
            break;
        }
        j->next = NULL;
        *r->done_tail = j;
        r->done_tail = &j->next;
        uint64_t one = 1;
        if (write(r->evfd, &one, sizeof one) < 0) {
            /* the counter cannot overflow in practice; nothing to do */
        }
    }
    unref_locked(r);
    return NULL;
}

struct hostres *hostres_new(struct fb_err *err)
{
    struct hostres *r = fb_xcalloc(1, sizeof *r);
    r->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->evfd < 0) {
        free(r);
        fb_errno(err, FB_EXIT_SETUP, "eventfd");
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->todo_tail = &r->todo;
    r->done_tail = &r->done;
    r->refs = 1;
    return r;
}

int hostres_fd(const struct hostres *r) { return r->evfd; }

void hostres_submit(struct hostres *r, uint64_t id, const char *name)
{
    struct job *j = fb_xcalloc(1, sizeof *j);
    j->name = fb_xstrdup(name);
    j->res.id = id;
    pthread_mutex_lock(&r->mu);
    *r->todo_tail = j;
    r->todo_tail = &j->next;
    if (r->idle == 0 && r->nthreads < WORKERS) {
        /* Workers inherit the supervisor's blocked signal mask. */
        if (pthread_create(&r->tid[r->nthreads], NULL, worker, r) == 0) {
            r->nthreads++;
            r->refs++;
        }
    }
    if (r->nthreads == 0) {
        /* No thread could be started: resolve inline rather than never. */
        r->todo = NULL;
        r->todo_tail = &r->todo;
        pthread_mutex_unlock(&r->mu);
        lookup(j);
        pthread_mutex_lock(&r->mu);
        *r->done_tail = j;
        r->done_tail = &j->next;
        uint64_t one = 1;
        if (write(r->evfd, &one, sizeof one) < 0) {
            /* see worker() */
        }
    }
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

bool hostres_take(struct hostres *r, struct hostres_result *out)
{
    uint64_t v;
    if (read(r->evfd, &v, sizeof v) < 0) {
        /* EAGAIN: nothing signalled, but the list is what counts */
    }
    pthread_mutex_lock(&r->mu);
    struct job *j = r->done;
    if (j) {
        r->done = j->next;
        if (!r->done)
            r->done_tail = &r->done;
    }
    pthread_mutex_unlock(&r->mu);
    if (!j)
        return false;
    *out = j->res;
    free(j->name);
    free(j);
    return true;
}

void hostres_free(struct hostres *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_broadcast(&r->cv);
    int n = r->nthreads;
    pthread_t tid[WORKERS];
    memcpy(tid, r->tid, sizeof tid);
    pthread_mutex_unlock(&r->mu);
    /* Idle workers leave at once; one stuck in getaddrinfo() gets a moment
     * and is then left to finish on its own. */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_nsec += 200 * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    for (int i = 0; i < n; i++)
        if (pthread_timedjoin_np(tid[i], NULL, &dl) != 0)
            pthread_detach(tid[i]);
    pthread_mutex_lock(&r->mu);
    unref_locked(r);
}
