/*
 * A multi-threaded PHP host for the thread suite: the embed SAPI of a thread-safe (ZTS) PHP, and THREADS threads
 * that each run PHP requests one after another in the same process, as FrankenPHP's threads do.
 *
 *   driver requests THREADS REQUESTS SCRIPT   each thread runs REQUESTS requests; each request includes SCRIPT
 *   driver worker THREADS REQUESTS SCRIPT     each thread runs one request that includes SCRIPT once (worker mode:
 *                                             the script loops over its REQUESTS "requests" itself)
 *
 * SCRIPT sees $thread (0..THREADS-1), $request (0..REQUESTS-1, or -1 in worker mode) and $requests. The extension
 * comes from php.ini as for any SAPI (PHP_INI_SCAN_DIR). Exit status: 0 when every request ran to its end without a
 * fatal error (a script reports a failed check with exit(1)), 1 otherwise; a pcntl_fork() child of a PHP thread
 * exits when its request ends, with that request's status.
 *
 * The main thread runs no script: it blocks SIGUSR1, so a SIGUSR1 sent to the process reaches a PHP thread that does
 * not block it (tests/Threads/signals.php). The kernel offers a process-directed signal to the main thread first,
 * and ZTS PHP keeps signal handlers per thread: this thread's request (php_embed_init's) has none for it, so PHP
 * would take the default action and end the process. The PHP threads start with the mask the main thread had
 * before it blocked SIGUSR1.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sapi/embed/php_embed.h>

static const char *script;
static int requests;
static int worker_mode;
static pthread_mutex_t failures_lock = PTHREAD_MUTEX_INITIALIZER;
static int failures;
static sigset_t thread_mask;
static pid_t driver;

static void failed(long thread, const char *why)
{
	pthread_mutex_lock(&failures_lock);
	failures++;
	fprintf(stderr, "driver: thread %ld: %s\n", thread, why);
	pthread_mutex_unlock(&failures_lock);
}

/* One PHP request on this thread: startup, the script, shutdown. */
static void one_request(long thread, int request)
{
	char code[4096];
	if (php_request_startup() == FAILURE) {
		failed(thread, "request startup failed");
		return;
	}
	SG(headers_sent) = 1;
	SG(request_info).no_headers = 1;
	EG(exit_status) = 0; /* the thread's last request may have left its own */
	snprintf(code, sizeof code, "$thread = %ld; $request = %d; $requests = %d; include '%s';",
		thread, request, requests, script);
	zend_first_try {
		/* handle_exceptions: an uncaught exception ends the request as it ends a script (reported, status 255). */
		zend_eval_string_ex(code, NULL, "driver", 1);
	} zend_end_try();
	int status = EG(exit_status);
	if (status != 0) {
		char why[64];
		snprintf(why, sizeof why, "request %d ended with status %d", request, status);
		failed(thread, why);
	}
	php_request_shutdown(NULL);
	if (getpid() != driver) {
		/* A pcntl_fork() child of this thread (tests/Threads/fork.php): it has no other thread, and would run this
		 * thread's next requests, then exit with 0 as the last thread to end. It ends here, with its request's status. */
		_exit(status);
	}
}

static void *run_thread(void *arg)
{
	long thread = (long) arg;
	pthread_sigmask(SIG_SETMASK, &thread_mask, NULL);
	(void) ts_resource(0);
	if (worker_mode) {
		one_request(thread, -1);
	} else {
		for (int request = 0; request < requests; request++) {
			one_request(thread, request);
		}
	}
	ts_free_thread();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[1], "requests") != 0 && strcmp(argv[1], "worker") != 0)) {
		fprintf(stderr, "usage: driver requests|worker THREADS REQUESTS SCRIPT\n");
		return 2;
	}
	driver = getpid();
	worker_mode = strcmp(argv[1], "worker") == 0;
	long threads = atol(argv[2]);
	requests = atoi(argv[3]);
	script = argv[4];
	if (threads < 1 || threads > 256 || requests < 1 || strchr(script, '\'') != NULL) {
		fprintf(stderr, "driver: 1..256 threads, at least one request, a script path without quotes\n");
		return 2;
	}
	if (php_embed_init(0, NULL) == FAILURE) {
		fprintf(stderr, "driver: PHP did not start\n");
		return 1;
	}
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, &thread_mask);
	pthread_t *ids = calloc((size_t) threads, sizeof *ids);
	for (long i = 0; i < threads; i++) {
		if (pthread_create(&ids[i], NULL, run_thread, (void *) i) != 0) {
			fprintf(stderr, "driver: cannot start thread %ld\n", i);
			return 1;
		}
	}
	for (long i = 0; i < threads; i++) {
		pthread_join(ids[i], NULL);
	}
	free(ids);
	php_embed_shutdown();
	return failures == 0 ? 0 : 1;
}
