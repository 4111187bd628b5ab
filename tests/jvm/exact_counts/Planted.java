// The planted program of jvm_exact_counts_suite.py: 8 threads allocate at sites in loops, branches, switches,
// try/catch with exceptions thrown between allocations (caught in the same method, in callers, in a recursive
// caller of the same method, and uncaught, ending a thread), recursion, lambdas, constructors that throw after
// `new`, arrays of every kind and multianewarray, and static initialisers. Each planted site is the only allocation
// on its line, marked with a comment S<n>; the program keeps its own truth per site (TRUTH[n], incremented when the
// allocation has happened) and writes it as JSON to args[0] at exit. What it prints to standard output depends only
// on its work, so runs with and without the agent must print the same.
import java.io.FileWriter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

public class Planted {
    static final AtomicLong[] TRUTH = new AtomicLong[64];
    static {
        for (int i = 0; i < TRUTH.length; ++i) TRUTH[i] = new AtomicLong();
    }

    static void t(int site) {
        TRUTH[site].incrementAndGet();
    }

    static final class Fail extends RuntimeException {
        Fail() {
            super(null, null, false, false);
        }
    }

    static final class Node {
        final Node next;
        Node(Node next, int i) {
            this.next = next;
            if (i % 7 == 3) throw new Fail(); // S0
        }
    }

    static final class Early {
        static final byte[] TABLE;
        static {
            TABLE = new byte[100]; // S1
            t(1);
        }
    }

    static volatile Object sink;

    static int loopsAndBranches(int seed) {
        int sum = 0;
        for (int i = 0; i < 200; ++i) {
            Object o = new Object(); // S2
            t(2);
            if ((i + seed) % 3 == 0) {
                sink = new StringBuilder(); // S3
                t(3);
            } else if ((i ^ seed) % 5 == 1) {
                sink = new long[i % 4]; // S4
                t(4);
            }
            switch (i % 4) {
            case 0: sink = new char[2]; t(5); break; // S5
            case 2: sink = new short[1]; t(6); break; // S6
            default: sum += o == null ? 0 : 1;
            }
            switch ((i * 31 + seed) % 1000) {
            case 7: case 300: case 999: sink = new float[1]; t(7); break; // S7
            default: break;
            }
            sum += i;
        }
        return sum;
    }

    static int throwsBetween(int i) {
        sink = new double[1]; // S8
        t(8);
        if (i % 5 == 0) { t(9); throw new Fail(); } // S9
        sink = new boolean[2]; // S10
        t(10);
        if (i % 7 == 0) { t(11); throw new IllegalStateException(); } // S11
        sink = new Integer[1]; // S12
        t(12);
        return i;
    }

    static int catchesHere(int i) {
        int r = 0;
        try {
            sink = new int[3]; // S13
            t(13);
            if (i % 4 == 1) { t(14); throw new Fail(); } // S14
            sink = new String[2]; // S15
            t(15);
            r = i / (i % 6); // ArithmeticException, allocated by the JVM
            sink = new Object[1]; // S16
            t(16);
        } catch (Fail | ArithmeticException e) {
            sink = new byte[1]; // S17
            t(17);
        } finally {
            sink = new int[1][1]; // S18
            t(18);
        }
        return r;
    }

    static int callerCatches(int i) {
        try {
            sink = new ArrayList<Integer>(); // S19
            t(19);
            return throwsBetween(i);
        } catch (Fail e) {
            return -1;
        }
    }

    // Recursion: each level allocates, the deepest throws, a level of the same method catches.
    static int recurse(int depth, int catchAt, int throwAt) {
        sink = new int[depth + 1]; // S20
        t(20);
        if (depth == throwAt) { t(21); throw new Fail(); } // S21
        try {
            int r = recurse(depth + 1, catchAt, throwAt);
            sink = new long[1]; // S22
            t(22);
            return r + 1;
        } catch (Fail e) {
            if (depth != catchAt) throw e;
            sink = new char[depth]; // S23
            t(23);
            return 0;
        }
    }

    static int arrays(int i) {
        int n = (i % 3) - 1; // -1, 0, 1
        try {
            sink = new int[n][2]; // S24
            t(24);
        } catch (NegativeArraySizeException e) {
            sink = new String[0][]; // S25
            t(25);
        }
        try {
            sink = new Object[n]; // S26
            t(26);
        } catch (NegativeArraySizeException e) {
            // nothing allocated at S26
        }
        sink = new byte[2][3][4]; // S27
        t(27);
        sink = new int[2][][]; // S28
        t(28);
        sink = new boolean[1][1]; // S29
        t(29);
        return n;
    }

    static int constructors(int i) {
        Node head = null;
        int failed = 0;
        for (int k = 0; k < 10; ++k) {
            t(30);
            try {
                head = new Node(head, i + k); // S30
            } catch (Fail e) {
                ++failed;
                t(0);
            }
        }
        return failed;
    }

    static int lambdas(int i) {
        IntFunction<Object> make = n -> {
            t(31);
            return new int[n]; // S31
        };
        Runnable r = () -> {
            sink = new StringBuilder("x"); // S32
            t(32);
        };
        int total = 0;
        for (int k = 0; k < 3; ++k) {
            total += ((int[]) make.apply(k + i % 2)).length;
            r.run();
        }
        return total;
    }

    static int rounds = 300;

    static long work(int seed) {
        long sum = 0;
        for (int i = 0; i < rounds; ++i) {
            sum += loopsAndBranches(seed + i);
            try {
                sum += throwsBetween(seed + i);
            } catch (Fail | IllegalStateException e) {
                sum += 3;
            }
            sum += catchesHere(seed + i);
            try {
                sum += callerCatches(seed + i);
            } catch (IllegalStateException e) {
                sum += 7; // two frames up from the throw
            }
            try {
                sum += recurse(0, i % 4, 2 + i % 5);
            } catch (Fail e) {
                sum += 5; // caught nowhere below: catchAt was deeper than throwAt
            }
            sum += arrays(seed + i);
            sum += constructors(seed + i);
            sum += lambdas(seed + i);
            sum += Early.TABLE.length;
        }
        return sum;
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 1) rounds = Integer.parseInt(args[1]);
        final int threads = 8;
        final long[] results = new long[threads];
        final List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; ++t) {
            final int seed = t * 1000;
            Thread thread = new Thread(() -> results[seed / 1000] = work(seed));
            all.add(thread);
        }
        // Threads that end by an uncaught exception, after allocating.
        final AtomicLong uncaught = new AtomicLong();
        for (int t = 0; t < 4; ++t) {
            final int seed = t;
            Thread thread = new Thread(() -> {
                sink = new Object[seed + 1]; // S33
                t(33);
                throwsBetween(5 * seed); // seeds 0..3: 0, 5, 10, 15 all throw Fail at S9
            });
            thread.setUncaughtExceptionHandler((th, e) -> uncaught.incrementAndGet());
            all.add(thread);
        }
        for (Thread thread : all) thread.start();
        for (Thread thread : all) thread.join();
        long total = 0;
        for (long r : results) total += r;
        System.out.println("total " + total + ", uncaught " + uncaught.get());
        try (FileWriter out = new FileWriter(args[0])) {
            out.write("{");
            for (int i = 0; i < TRUTH.length; ++i) out.write((i == 0 ? "" : ", ") + "\"" + i + "\": " + TRUTH[i].get());
            out.write("}\n");
        }
    }
}
