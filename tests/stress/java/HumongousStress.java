// Large growing text buffers, as a template engine or a report writer makes them: each round builds a page of
// ROWS table rows in a StringBuilder, whose backing array doubles as it grows, so that at a JVM's default heap G1
// allocates the larger ones humongous (half a region or more), then keeps only its hash. Every buffer is garbage
// at once; a profiler that refers to one (a JNI weak reference, a JVMTI tag) keeps G1 from reclaiming it at the
// next young collection. Prints one checksum over all the pages.
//
// usage: java -cp . HumongousStress [ROUNDS [ROWS]]   (defaults 100 and 200000)
public final class HumongousStress {
    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 100;
        int rows = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        long checksum = 0;
        for (int round = 0; round < rounds; round++) {
            StringBuilder page = new StringBuilder();
            for (int row = 0; row < rows; row++) {
                page.append("<tr><td>").append(row).append("</td><td>round ").append(round).append("</td></tr>\n");
            }
            checksum = checksum * 31 + page.toString().hashCode();
        }
        System.out.println("checksum " + Long.toHexString(checksum));
    }
}
