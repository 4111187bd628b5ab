// The counter hook of the bytecode_verify_* tests: instrumented code calls Counts.hit(index). Put on the boot class
// path (-Xbootclasspath/a:) so that every class loader sees it. What it counts is not checked there; it only has to
// be callable from anywhere, without loading or allocating anything an instrumented class might need.
package ojx;

public final class Counts {
    private static final long[] COUNTS = new long[1 << 22];

    private Counts() {}

    public static void add(int amount, int index) {
        if (index >= 0 && index < COUNTS.length) {
            COUNTS[index] += amount;
        }
    }

    public static void hit(int index) {
        if (index >= 0 && index < COUNTS.length) {
            COUNTS[index]++;
        }
    }
}
