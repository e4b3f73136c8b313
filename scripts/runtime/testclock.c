/*
 * The end-to-end tests' clock: preloaded into the runtime's processes
 * (LD_PRELOAD=.cache/testclock.so TESTCLOCK_FILE=<file>), it adds the signed 64-bit little-endian
 * number of milliseconds held in <file> to the wall clock (CLOCK_REALTIME, gettimeofday, time):
 * what Date.now(), hence the Worker's time.time(), reads in workerd. The
 * monotonic clock, which timers and performance.now() run on, is left alone, so a test moves a
 * cooldown's end without making pending timers fire. A test writes the file to move time
 * (tests/support/runtime.py); nothing of this is part of the Worker or of a deployed runtime.
 *
 * The file is mapped once and read on every call (no system call); without TESTCLOCK_FILE, or
 * with a file that cannot be mapped, the clock is the real one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const volatile int64_t *offset_ms_at;
static int mapped; /* 0: not yet, 1: mapped, -1: no file */

static int64_t offset_ms(void) {
  int state = __atomic_load_n(&mapped, __ATOMIC_ACQUIRE);
  if (state == 0) {
    const char *file = getenv("TESTCLOCK_FILE");
    int fd = file ? open(file, O_RDONLY | O_CLOEXEC) : -1;
    void *at = fd >= 0 ? mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0) close(fd);
    /* Racing threads map the same file; either mapping reads the same bytes. */
    if (at != MAP_FAILED) offset_ms_at = at;
    state = at != MAP_FAILED ? 1 : -1;
    __atomic_store_n(&mapped, state, __ATOMIC_RELEASE);
  }
  return state == 1 ? *offset_ms_at : 0;
}

static void shift(struct timespec *ts) {
  int64_t ns = (int64_t)ts->tv_nsec + offset_ms() * 1000000;
  int64_t seconds = ns / 1000000000, rest = ns % 1000000000;
  if (rest < 0) {
    rest += 1000000000;
    seconds -= 1;
  }
  ts->tv_sec += seconds;
  ts->tv_nsec = rest;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
  static int (*real)(clockid_t, struct timespec *);
  if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  int result = real(clock, ts);
  if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) shift(ts);
  return result;
}

int gettimeofday(struct timeval *tv, void *tz) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  (void)tz;
  return 0;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
