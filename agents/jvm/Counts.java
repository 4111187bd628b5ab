// ojx/Counts: the class every method instrumented for exact allocation counts (count=) calls, `hit(index)` once
// per counter increment. The agent defines it in the boot loader at VMInit, exports jdk.internal.misc to its module,
// makes every module read it, and initialises it before the first class is rewritten; it is never instrumented.
//
// Storage: one 64-bit counter per global counter index, in chunks of 4096 that the agent allocates (JNI) and
// stores into CHUNKS before it returns a class whose code uses their indices, so `hit` never finds a chunk missing.
// Increments are atomic (a locked add), so no update is lost under any number of threads; counters striped by
// thread id measured within the noise of this on 2 vCPUs, at 8 times the memory (agents/jvm/README.md, "Exact
// counts"). `hit` calls nothing that allocates or is
// instrumented: an increment must not count or recurse.
package ojx;

import jdk.internal.misc.Unsafe;

public final class Counts {
    private static final Unsafe U = Unsafe.getUnsafe();
    // Read through reflection: the field and the method's return type differ between JDKs (int, then long). The
    // agent initialises this class before any class is rewritten, so reflection here counts nothing.
    private static final long BASE = baseOffset();
    static final int CHUNK_BITS = 12; // 4096 counters a chunk (exact_counting.cpp's chunk_counters)
    static final long[][] CHUNKS = new long[1 << 16][];

    private Counts() {}

    private static long baseOffset() {
        try {
            return ((Number) Unsafe.class.getMethod("arrayBaseOffset", Class.class).invoke(U, long[].class)).longValue();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("ojx/Counts: no array base offset", e);
        }
    }

    public static void add(int amount, int index) {
        U.getAndAddLong(CHUNKS[index >>> CHUNK_BITS], BASE + ((long) (index & ((1 << CHUNK_BITS) - 1)) << 3), amount);
    }

    public static void hit(int index) {
        U.getAndAddLong(CHUNKS[index >>> CHUNK_BITS], BASE + ((long) (index & ((1 << CHUNK_BITS) - 1)) << 3), 1L);
    }
}
