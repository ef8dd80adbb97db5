/* sess_worker.c — the threads that spawn and release session sandboxes
 * (sess_sandbox.h: worker_*).
 *
 * Why worker threads: sandbox_spawn() waits for the child to build its root
 * and report READY (milliseconds); the server's single event loop must not
 * stall for every session.create or pool refill. Long-lived threads do every
 * spawn and release. They must live as long as the server: PR_SET_PDEATHSIG
 * in a sandbox fires when the *thread* that created it exits. Nothing else
 * runs on them; the server's loop only hands them sessions it does not touch
 * until the job comes back. */
#include "sess_sandbox.h"

#include "sess_copy.h"

#include "toolchain.h"

#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>

/* ---- the workers ---- */

/* Several threads spawn and release sandboxes at once (a spawn mostly waits
 * for its child to build its root, on another CPU): 2 per CPU, at most
 * WORKERS_MAX, or FLUEBOX_SPAWN_WORKERS. Releases go first (they answer a
 * session.destroy and free what spawns need); spawns are taken in turn from
 * each client's queue (s->queue_key: a connection, or the pool), so one
 * client's burst does not hold up another's single create. */
#define WORKERS_MAX 16

struct wjob {
    struct fb_session *s;
    enum worker_job kind;
    struct wjob *next;
};

/* The spawns queued by one client, in the round. */
struct wqueue {
    uintptr_t key;
    struct wjob *head, *tail;
    struct wqueue *next;
};

static pthread_mutex_t wmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wcv = PTHREAD_COND_INITIALIZER;
static struct wjob *rel_head, *rel_tail, *wd_head, *wd_tail;
static struct wqueue *rr_head, *rr_tail; /* clients with spawns queued, in turn */
static bool wstop, wrunning;
static int wefd = -1;
static pthread_t wthreads[WORKERS_MAX];
static int nworkers;
static int wimage = -1; /* the image session inits run (open_image) */

/* The clone guard (spawn.h). The child of a clone3 is a copy of the calling
 * thread alone: a lock another thread held at that instant (malloc's,
 * stdio's) stays locked in it forever. So at a clone every other thread of
 * the server holds still at a point where it holds no such lock:
 *   - the other workers: a worker holds `gate` for reading while it works
 *     and lets go of it only where it holds no lock (waiting for a job, for
 *     its child's messages: spawn.h's wait hook, for a reap); a clone takes
 *     it for writing (writers first, so a clone is not starved);
 *   - the main thread: the worker asks it to hold still at a safe point of
 *     its loop (worker_hold) for the instant of the clone3. */
static pthread_rwlock_t gate;
static pthread_cond_t qcv = PTHREAD_COND_INITIALIZER;
static bool main_joining;
/* Clone number q_gen was asked for; the main thread acknowledged q_acked
 * and waits until the worker reports q_done. Counters, not flags: a worker
 * may ask for the next clone before the main thread has seen the previous
 * one end. One clone at a time (the gate). */
static uint64_t q_gen, q_acked, q_done;

/* This worker holds the gate for writing for a whole job: a fork's spawn,
 * whose seed is copied by a child process cloned without the guard
 * (childjob.h). */
static __thread bool gate_excl;

static void gate_hold(bool hold)
{
    if (gate_excl)
        return;
    if (hold)
        pthread_rwlock_rdlock(&gate);
    else
        pthread_rwlock_unlock(&gate);
}

static void gate_wait(bool begin)
{
    gate_hold(!begin);
}

static void clone_guard(bool before)
{
    if (before && !gate_excl) {
        pthread_rwlock_unlock(&gate);
        pthread_rwlock_wrlock(&gate);
    }
    pthread_mutex_lock(&wmu);
    if (before) {
        q_gen++;
        uint64_t one = 1;
        if (write(wefd, &one, sizeof one) < 0) {
            /* cannot fail with a counter this small */
        }
        while (q_acked != q_gen && !main_joining)
            pthread_cond_wait(&qcv, &wmu);
    } else {
        q_done = q_gen;
        pthread_cond_broadcast(&qcv);
    }
    pthread_mutex_unlock(&wmu);
    if (!before && !gate_excl) {
        pthread_rwlock_unlock(&gate);
        pthread_rwlock_rdlock(&gate);
    }
}

void worker_hold(void)
{
    pthread_mutex_lock(&wmu);
    if (q_acked != q_gen) {
        uint64_t g = q_gen;
        q_acked = g;
        pthread_cond_broadcast(&qcv);
        while (q_done != g)
            pthread_cond_wait(&qcv, &wmu);
    }
    pthread_mutex_unlock(&wmu);
}

/* A pool sandbox's policy, built here rather than on the server's loop:
 * the toolchain look-ups of policy_finish would hold up the requests that
 * follow the session.create which took from the pool (an exec, mostly). */
static int pool_policy_build(struct fb_session *s)
{
    policy_free(&s->pol);
    if (session_pool_policy(&s->pol, &s->spawn_err) < 0)
        return -1;
    if (!s->pol.limits.nofile)
        s->pol.limits.nofile = s->pool_nofile;
    s->pol.quiet = s->pol.quiet || s->pool_quiet;
    /* The pool's shape: the programs its recent callers' PATH found
     * (server_pool.c), bound as a caller's policy would bind them. */
    tool_binds_append(&s->pol, s->pool_binds, s->npool_binds);
    s->pool_policy = false;
    return 0;
}

/* Hand a finished job (or a WJ_REAPED report) to the loop. */
static void worker_post(struct wjob *j)
{
    j->next = NULL;
    pthread_mutex_lock(&wmu);
    if (wd_tail)
        wd_tail->next = j;
    else
        wd_head = j;
    wd_tail = j;
    pthread_mutex_unlock(&wmu);
    uint64_t one = 1;
    if (write(wefd, &one, sizeof one) < 0) {
        /* eventfd counter overflow cannot happen at this rate */
    }
}

/* The next job (wmu held): a release, else the next client's spawn. */
static struct wjob *next_job(void)
{
    struct wjob *j = rel_head;
    if (j) {
        rel_head = j->next;
        if (!rel_head)
            rel_tail = NULL;
        return j;
    }
    struct wqueue *q = rr_head;
    if (!q)
        return NULL;
    j = q->head;
    q->head = j->next;
    rr_head = q->next;
    if (!rr_head)
        rr_tail = NULL;
    if (q->head) {
        /* More of this client's: behind the others now. */
        q->next = NULL;
        if (rr_tail)
            rr_tail->next = q;
        else
            rr_head = q;
        rr_tail = q;
    } else {
        free(q);
    }
    return j;
}

static void do_spawn(struct fb_session *s)
{
    memset(&s->spawn_err, 0, sizeof s->spawn_err);
    s->spawn_err.notes = &s->notes;
    struct fb_seed seed;
    struct fb_session_hooks hooks = {.main = sess_init_main, .clone_guard = clone_guard,
                                     .wait = gate_wait, .image_fd = wimage};
    if (s->pool_policy && pool_policy_build(s) < 0) {
        s->spawn_rc = -1;
        return;
    }
    if (s->fork) {
        fork_seed(s->fork, &seed);
        hooks.seed = &seed;
    }
    s->spawn_rc = sandbox_spawn_session(&s->pol, &hooks, &s->sb, &s->spawn_err);
}

static void do_release(struct fb_session *s)
{
    sandbox_kill(&s->sb);
    if (!s->sb.ll) {
        /* Nothing of it runs once init is reaped: say so before the
         * clean-up (cgroup, layers, fds), so a session.destroy is answered
         * then. A landlock sandbox has no pid namespace: its leftovers are
         * found by the release itself. The reap only waits: no lock held. */
        gate_hold(false);
        sandbox_reap(&s->sb);
        gate_hold(true);
        struct wjob *r = fb_xcalloc(1, sizeof *r);
        r->s = s;
        r->kind = WJ_REAPED;
        worker_post(r);
    }
    sandbox_release(&s->sb);
}

static void *worker_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&wmu);
        struct wjob *j;
        while (!(j = next_job()) && !wstop)
            pthread_cond_wait(&wcv, &wmu);
        pthread_mutex_unlock(&wmu);
        if (!j)
            break; /* stopping and nothing left */
        struct fb_session *s = j->s;
        if (j->kind == WJ_SPAWN && s->fork) {
            pthread_rwlock_wrlock(&gate);
            gate_excl = true;
        } else {
            gate_hold(true);
        }
        if (j->kind == WJ_SPAWN && wstop) {
            s->spawn_rc = -1;
            fb_errf(&s->spawn_err, FB_EXIT_SETUP, "the server is stopping");
        } else if (j->kind == WJ_SPAWN) {
            do_spawn(s);
        } else {
            do_release(s);
        }
        if (gate_excl) {
            gate_excl = false;
            pthread_rwlock_unlock(&gate);
        } else {
            gate_hold(false);
        }
        worker_post(j);
    }
    return NULL;
}

static int workers_wanted(void)
{
    const char *e = getenv("FLUEBOX_SPAWN_WORKERS");
    long n = e && *e ? strtol(e, NULL, 10) : 2 * sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > WORKERS_MAX ? WORKERS_MAX : (int)n;
}

/* The image every session's init runs its loop in (spawn.h, image_fd):
 * this very binary, when it is static (a dynamic one would need its loader
 * and libraries at the same paths inside every sandbox, which a profile's
 * root need not have: then the loop stays in the clone of the server, as
 * it does with FLUEBOX_SESSION_IMAGE=0, for comparisons in bench/). -1:
 * none. The descriptor is of the file as it was at start: an upgrade that
 * replaces it on disk does not mix two versions in one server. */
static int open_image(void)
{
    const char *e = getenv("FLUEBOX_SESSION_IMAGE");
    if (e && !strcmp(e, "0"))
        return -1;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf64_Ehdr eh;
    Elf64_Phdr ph[64];
    bool ok = pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
              !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
              eh.e_phentsize == sizeof ph[0] && eh.e_phnum > 0 && eh.e_phnum <= 64;
    size_t sz = ok ? eh.e_phnum * sizeof ph[0] : 0;
    ok = ok && pread(fd, ph, sz, (off_t)eh.e_phoff) == (ssize_t)sz;
    for (size_t i = 0; ok && i < eh.e_phnum; i++)
        if (ph[i].p_type == PT_INTERP)
            ok = false;
    if (ok && fd < 3) { /* spawn.h: a descriptor above stdio */
        int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        close(fd);
        fd = hi;
    }
    if (!ok && fd >= 0)
        close(fd);
    return ok ? fd : -1;
}

int worker_start(struct fb_err *err)
{
    wimage = open_image();
    wefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wefd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "eventfd");
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&gate, &ra);
    pthread_rwlockattr_destroy(&ra);
    int want = workers_wanted();
    for (nworkers = 0; nworkers < want; nworkers++) {
        int r = pthread_create(&wthreads[nworkers], NULL, worker_main, NULL);
        if (r) {
            if (nworkers)
                break; /* fewer workers than asked for: still serves */
            errno = r;
            return fb_errno(err, FB_EXIT_SETUP, "starting the spawn thread");
        }
    }
    wrunning = true;
    return 0;
}

int worker_fd(void)
{
    return wefd;
}

void worker_ack(void)
{
    uint64_t v;
    if (read(wefd, &v, sizeof v) < 0) {
        /* EAGAIN: nothing pending */
    }
}

void worker_submit(struct fb_session *s, enum worker_job kind)
{
    struct wjob *j = fb_xcalloc(1, sizeof *j);
    j->s = s;
    j->kind = kind;
    pthread_mutex_lock(&wmu);
    if (kind == WJ_RELEASE) {
        if (rel_tail)
            rel_tail->next = j;
        else
            rel_head = j;
        rel_tail = j;
    } else {
        struct wqueue *q = rr_head;
        while (q && q->key != s->queue_key)
            q = q->next;
        if (!q) {
            q = fb_xcalloc(1, sizeof *q);
            q->key = s->queue_key;
            if (rr_tail)
                rr_tail->next = q;
            else
                rr_head = q;
            rr_tail = q;
        }
        if (q->tail && q->head)
            q->tail->next = j;
        else
            q->head = j;
        q->tail = j;
    }
    pthread_cond_signal(&wcv);
    pthread_mutex_unlock(&wmu);
}

struct fb_session *worker_done(enum worker_job *kind)
{
    pthread_mutex_lock(&wmu);
    struct wjob *j = wd_head;
    if (j) {
        wd_head = j->next;
        if (!wd_head)
            wd_tail = NULL;
    }
    pthread_mutex_unlock(&wmu);
    if (!j)
        return NULL;
    struct fb_session *s = j->s;
    *kind = j->kind;
    free(j);
    return s;
}

void worker_stop(void)
{
    if (!wrunning)
        return;
    pthread_mutex_lock(&wmu);
    wstop = true;
    main_joining = true; /* blocked in pthread_join, we hold no lock */
    pthread_cond_broadcast(&wcv);
    pthread_cond_broadcast(&qcv);
    pthread_mutex_unlock(&wmu);
    for (int i = 0; i < nworkers; i++)
        pthread_join(wthreads[i], NULL);
    wrunning = false;
}
