// The storage choices for ojx/Counts measured side by side (agents/jvm/README.md, "Exact counts"): 8 threads
// hammer one counter through each, and the wall time per increment (all threads' increments together: throughput,
// so contention and the machine's cores show), each thread's time per increment, and whether every increment
// arrived are printed.
//
//   javac --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -d OUT CountsStorageBench.java
//   java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -cp OUT CountsStorageBench [increments per thread]
import jdk.internal.misc.Unsafe;

public final class CountsStorageBench {
    static final Unsafe U = Unsafe.getUnsafe();
    static final long BASE = Unsafe.ARRAY_LONG_BASE_OFFSET;
    static final int CHUNK_BITS = 12, CHUNK = 1 << CHUNK_BITS, STRIPES = 8;
    static final long[][] ONE = {new long[CHUNK]};
    static final long[][] STRIPED = {new long[CHUNK * STRIPES]};
    static final long[][] PLAIN = {new long[CHUNK]};

    // One atomic counter per counter.
    static void one(int index) {
        U.getAndAddLong(ONE[index >>> CHUNK_BITS], BASE + ((long) (index & (CHUNK - 1)) << 3), 1L);
    }

    // Striped by thread id: a counter's stripes lie a chunk's width (32 KiB) apart, so no two share a cache line.
    static void striped(int index) {
        final int stripe = (int) Thread.currentThread().getId() & (STRIPES - 1);
        U.getAndAddLong(STRIPED[index >>> CHUNK_BITS],
                BASE + ((long) ((stripe << CHUNK_BITS) | (index & (CHUNK - 1))) << 3), 1L);
    }

    // Racy, loses updates: the floor, not a choice.
    static void plain(int index) {
        PLAIN[index >>> CHUNK_BITS][index & (CHUNK - 1)]++;
    }

    interface Hit { void hit(int index); }

    static double run(String name, Hit hit, long perThread, java.util.function.LongSupplier total) throws Exception {
        Thread[] threads = new Thread[8];
        for (int t = 0; t < threads.length; ++t) {
            threads[t] = new Thread(() -> {
                for (long i = 0; i < perThread; ++i) hit.hit(100);
            });
        }
        long start = System.nanoTime();
        for (Thread t : threads) t.start();
        for (Thread t : threads) t.join();
        long ns = System.nanoTime() - start;
        double per = (double) ns * threads.length / (perThread * threads.length);
        System.out.printf("%-8s %5.2f ns wall per increment (%6.2f ns per increment per thread), counted %d of %d%n",
                name, (double) ns / (perThread * threads.length), per, total.getAsLong(), perThread * threads.length);
        return per;
    }

    public static void main(String[] args) throws Exception {
        long perThread = args.length > 0 ? Long.parseLong(args[0]) : 20_000_000L;
        for (int round = 0; round < 3; ++round) {
            ONE[0][100] = 0;
            PLAIN[0][100] = 0;
            for (int s = 0; s < STRIPES; ++s) STRIPED[0][(s << CHUNK_BITS) | 100] = 0;
            run("one", CountsStorageBench::one, perThread, () -> ONE[0][100]);
            run("striped", CountsStorageBench::striped, perThread, () -> {
                long sum = 0;
                for (int s = 0; s < STRIPES; ++s) sum += STRIPED[0][(s << CHUNK_BITS) | 100];
                return sum;
            });
            run("plain", CountsStorageBench::plain, perThread, () -> PLAIN[0][100]);
        }
    }
}
