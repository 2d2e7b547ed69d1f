/*
 * gram5_client.c - load generator for the real Globus GRAM5 stack, used by bench/gram5/run.sh.
 *
 * It talks to a gatekeeper through libglobus-gram-client, the library Condor-G used, and runs
 * every job the way Kite's grid path does: two-phase commit (the RSL carries two_phase, the
 * gatekeeper answers WAITING_FOR_COMMIT, we send COMMIT_REQUEST), a state callback for DONE or
 * FAILED, then COMMIT_END so the job manager may forget the job. A job counts as finished once
 * its COMMIT_END has been acknowledged.
 *
 *   gram5_client latency    CONTACT RUNS          one job at a time; prints latency_ms=X per job
 *                                                 (submit until the DONE callback arrives)
 *   gram5_client throughput CONTACT JOBS THREADS  JOBS jobs from THREADS threads; prints
 *                                                 seconds=, done=, failed=, errors=
 *
 * Exit status is non-zero if any job failed, any call returned an error, or nothing happened for
 * STALL_SECONDS: the caller must not report figures in that case.
 */
#include <globus_gram_client.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RSL "&(executable=/bin/true)(two_phase=600)"
#define STATE_MASK (GLOBUS_GRAM_PROTOCOL_JOB_STATE_DONE | GLOBUS_GRAM_PROTOCOL_JOB_STATE_FAILED)
#define STALL_SECONDS 180

/* Every job contact whose final state has been seen: used to ignore repeated callbacks and,
 * in latency mode, to wait for one particular job. Grows as needed. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static char **finished;
static size_t n_finished, cap_finished;
/* Contacts waiting for COMMIT_END (a stack; order does not matter). */
static char **to_end;
static size_t n_to_end, cap_to_end;

static int jobs_total, next_submit, jobs_ended, jobs_failed, call_errors;
static double last_progress;
static const char *gatekeeper;
static char *callback_contact;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void push(char ***v, size_t *n, size_t *cap, char *s)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *v = realloc(*v, *cap * sizeof **v);
        if (!*v) { perror("realloc"); exit(2); }
    }
    (*v)[(*n)++] = s;
}

static int seen(const char *contact)
{
    for (size_t i = 0; i < n_finished; i++)
        if (strcmp(finished[i], contact) == 0) return 1;
    return 0;
}

/* Called on a Globus callback thread for every state the job manager reports. */
static void on_state(void *arg, char *contact, int state, int errorcode)
{
    (void) arg;
    if (state != GLOBUS_GRAM_PROTOCOL_JOB_STATE_DONE && state != GLOBUS_GRAM_PROTOCOL_JOB_STATE_FAILED)
        return;
    pthread_mutex_lock(&lock);
    if (!seen(contact)) {
        push(&finished, &n_finished, &cap_finished, strdup(contact));
        push(&to_end, &n_to_end, &cap_to_end, strdup(contact));
        if (state == GLOBUS_GRAM_PROTOCOL_JOB_STATE_FAILED) {
            jobs_failed++;
            fprintf(stderr, "gram5_client: job %s FAILED: %s\n", contact,
                    globus_gram_client_error_string(errorcode));
        }
        last_progress = now();
        pthread_cond_broadcast(&changed);
    }
    pthread_mutex_unlock(&lock);
}

/* Submit one job and commit it. Returns the job contact (caller frees) or NULL. */
static char *submit(void)
{
    char *contact = NULL;
    int rc = globus_gram_client_job_request(gatekeeper, RSL, STATE_MASK, callback_contact, &contact);
    if (rc != GLOBUS_GRAM_PROTOCOL_ERROR_WAITING_FOR_COMMIT) {
        fprintf(stderr, "gram5_client: job request: %s (%d)\n", globus_gram_client_error_string(rc), rc);
        if (contact) globus_gram_client_job_contact_free(contact);
        return NULL;
    }
    int status = 0, failure = 0;
    rc = globus_gram_client_job_signal(contact, GLOBUS_GRAM_PROTOCOL_JOB_SIGNAL_COMMIT_REQUEST, NULL,
                                       &status, &failure);
    if (rc != GLOBUS_SUCCESS) {
        fprintf(stderr, "gram5_client: commit request: %s (%d)\n", globus_gram_client_error_string(rc), rc);
        globus_gram_client_job_contact_free(contact);
        return NULL;
    }
    return contact;
}

static int commit_end(const char *contact)
{
    int status = 0, failure = 0;
    int rc = globus_gram_client_job_signal(contact, GLOBUS_GRAM_PROTOCOL_JOB_SIGNAL_COMMIT_END, NULL,
                                           &status, &failure);
    if (rc != GLOBUS_SUCCESS)
        fprintf(stderr, "gram5_client: commit end: %s (%d)\n", globus_gram_client_error_string(rc), rc);
    return rc;
}

/* Throughput worker: ending finished jobs comes first, then submitting new ones. */
static void *worker(void *arg)
{
    (void) arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        if (call_errors) break;
        if (n_to_end > 0) {
            char *contact = to_end[--n_to_end];
            pthread_mutex_unlock(&lock);
            int rc = commit_end(contact);
            free(contact);
            pthread_mutex_lock(&lock);
            if (rc != GLOBUS_SUCCESS) call_errors++;
            jobs_ended++;
            last_progress = now();
            pthread_cond_broadcast(&changed);
        } else if (next_submit < jobs_total) {
            next_submit++;
            pthread_mutex_unlock(&lock);
            char *contact = submit();
            pthread_mutex_lock(&lock);
            if (!contact) call_errors++;
            else globus_gram_client_job_contact_free(contact);
            last_progress = now();
        } else if (jobs_ended >= jobs_total) {
            break;
        } else if (now() - last_progress > STALL_SECONDS) {
            fprintf(stderr, "gram5_client: no progress for %d s (%d of %d jobs ended)\n",
                    STALL_SECONDS, jobs_ended, jobs_total);
            call_errors++;
            break;
        } else {
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_sec += 1;
            pthread_cond_timedwait(&changed, &lock, &deadline);
        }
    }
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static int run_throughput(int jobs, int threads)
{
    pthread_t *tids = calloc((size_t) threads, sizeof *tids);
    jobs_total = jobs;
    last_progress = now();
    double start = now();
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tids[i], NULL, worker, NULL) != 0) { perror("pthread_create"); return 2; }
    for (int i = 0; i < threads; i++) pthread_join(tids[i], NULL);
    double seconds = now() - start;
    printf("seconds=%.3f done=%d failed=%d errors=%d\n", seconds, jobs_ended - jobs_failed, jobs_failed,
           call_errors);
    free(tids);
    return (call_errors || jobs_failed || jobs_ended != jobs) ? 1 : 0;
}

static int run_latency(int runs)
{
    for (int i = 0; i < runs; i++) {
        double start = now();
        char *contact = submit();
        if (!contact) return 1;
        pthread_mutex_lock(&lock);
        while (!seen(contact) && now() - start < STALL_SECONDS) {
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_sec += 1;
            pthread_cond_timedwait(&changed, &lock, &deadline);
        }
        int ok = seen(contact);
        double ms = (now() - start) * 1000.0;
        while (n_to_end > 0) free(to_end[--n_to_end]); /* this mode ends its job itself, below */
        pthread_mutex_unlock(&lock);
        if (!ok) {
            fprintf(stderr, "gram5_client: job %s: no DONE callback within %d s\n", contact, STALL_SECONDS);
            return 1;
        }
        if (jobs_failed) return 1;
        if (commit_end(contact) != GLOBUS_SUCCESS) return 1;
        globus_gram_client_job_contact_free(contact);
        printf("latency_ms=%.1f\n", ms);
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int latency = argc == 4 && strcmp(argv[1], "latency") == 0;
    int throughput = argc == 5 && strcmp(argv[1], "throughput") == 0;
    if (!latency && !throughput) {
        fprintf(stderr, "usage: %s latency CONTACT RUNS | throughput CONTACT JOBS THREADS\n", argv[0]);
        return 2;
    }
    gatekeeper = argv[2];
    int count = atoi(argv[3]);
    int threads = throughput ? atoi(argv[4]) : 1;
    if (count < 1 || threads < 1) { fprintf(stderr, "gram5_client: bad count\n"); return 2; }

    /* The blocking GRAM calls are used from several threads: Globus must run its pthread model. */
    if (globus_thread_set_model("pthread") != GLOBUS_SUCCESS) {
        fprintf(stderr, "gram5_client: cannot select the Globus pthread model\n");
        return 2;
    }
    if (globus_module_activate(GLOBUS_GRAM_CLIENT_MODULE) != GLOBUS_SUCCESS) {
        fprintf(stderr, "gram5_client: cannot activate the GRAM client module\n");
        return 2;
    }
    int rc = globus_gram_client_callback_allow(on_state, NULL, &callback_contact);
    if (rc != GLOBUS_SUCCESS) {
        fprintf(stderr, "gram5_client: callback_allow: %s\n", globus_gram_client_error_string(rc));
        return 2;
    }
    rc = latency ? run_latency(count) : run_throughput(count, threads);
    globus_gram_client_callback_disallow(callback_contact);
    globus_module_deactivate(GLOBUS_GRAM_CLIENT_MODULE);
    return rc;
}
