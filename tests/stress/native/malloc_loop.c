// A malloc-heavy loop: THREADS threads each keep a ring of 512 live objects of 1-4 KiB (the sizes the native agent
// tracks), replacing one per iteration: allocate, fill, read back an older object, free. Prints each thread's
// checksum in thread order, so the output is the same on every run.
//
// usage: malloc_loop THREADS ITERATIONS
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ring_size = 512 };

struct worker {
    pthread_t thread;
    unsigned id;
    long iterations;
    uint64_t checksum;
};

static void* work(void* argument) {
    struct worker* w = argument;
    unsigned char* ring[ring_size] = {0};
    size_t sizes[ring_size] = {0};
    uint64_t state = 0x9e3779b97f4a7c15ull * (w->id + 1), sum = 0;
    for (long i = 0; i < w->iterations; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        unsigned slot = (unsigned)(state >> 40) % ring_size;
        size_t size = 1024 + (size_t)(state >> 20) % 3073;
        if (ring[slot] != NULL) {
            // Read the old object before it goes: every 64th byte and its last one.
            for (size_t k = 0; k < sizes[slot]; k += 64) sum = sum * 31 + ring[slot][k];
            sum += ring[slot][sizes[slot] - 1];
            free(ring[slot]);
        }
        unsigned char* object = malloc(size);
        if (object == NULL) abort();
        // Many objects are alike (the same fill), some differ in one word: the profiler has something to find.
        memset(object, (int)(i % 7), size);
        if (i % 3 == 0) memcpy(object + size / 2, &i, sizeof i);
        ring[slot] = object;
        sizes[slot] = size;
    }
    for (unsigned s = 0; s < ring_size; s++) {
        if (ring[s] != NULL) sum = sum * 31 + ring[s][0];
        free(ring[s]);
    }
    w->checksum = sum;
    return NULL;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: malloc_loop THREADS ITERATIONS\n");
        return 2;
    }
    unsigned threads = (unsigned)atoi(argv[1]);
    long iterations = atol(argv[2]);
    struct worker* workers = calloc(threads, sizeof *workers);
    for (unsigned t = 0; t < threads; t++) {
        workers[t].id = t;
        workers[t].iterations = iterations;
        if (pthread_create(&workers[t].thread, NULL, work, &workers[t]) != 0) return 3;
    }
    for (unsigned t = 0; t < threads; t++) {
        pthread_join(workers[t].thread, NULL);
        printf("thread %u: %ld objects, checksum %016llx\n", t, iterations, (unsigned long long)workers[t].checksum);
    }
    free(workers);
    return 0;
}
