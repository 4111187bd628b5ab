// JavaReplicas: the Java test subject of ojx's JVMTI agent (libojx.so). An ordinary multi-threaded Java program
// with no ojx dependency; it runs the same with or without the agent. The Java counterpart of
// examples/native_replicas/native_replicas.cpp, with sites modelled on the OJXPerf paper's case studies.
//
// Worker threads keep a pool of live arrays per allocation site, read them over and over, and replace some of
// them over time. Some sites have replicas planted in them (objects with identical contents); the others are
// controls whose objects all differ. At exit the program writes, for every site, the exact largest
// identical-group ratio over all the objects it allocated (--truth FILE), which
// tests/ground_truth/check_profile.py compares with the profile the agent wrote.
//
//   java JavaReplicas [--seconds S] [--threads N] [--seed N] [--churn-ms MS] [--truth FILE] [--gc-pressure]
//
// The duration can also be given by the environment variable JAVA_REPLICAS_SECONDS (the option wins).
// Build: javac --release 11 -d DIR JavaReplicas.java (default package, no dependencies).
//
// Design points, each for the profiler's sake:
// - Every allocation site is its own static method with a distinctive name (no site name is a substring of
//   another or of any other method name in the program or the JDK), called from one place (allocateForSite),
//   which is called from one place (replaceObject), which is called from one place (Worker.run): each site is
//   one calling context. A profile frame reads e.g. "JavaReplicas.refillInputBuffer(JavaReplicas.java:NNN)".
//   The serialisation site allocates its result inside the JDK: its leaf frame is java.util.Arrays.copyOf,
//   called from java.io.ByteArrayOutputStream.toByteArray, called from JavaReplicas.serializeSnapshotCopy.
//   The partial-replica site allocates with Object.clone().
// - Contents are written once, right after allocation, and never changed: the truth, computed from the
//   contents at allocation time, holds for the object's whole life. Nothing ever locks on a site's object or
//   asks for its identity hash (their mark words stay unlocked and unhashed; GC age bits still differ).
// - Objects are 1-8 KiB including the array header (ojx tracks objects of at least 1 KiB by default). Lengths
//   are chosen so that header (16 bytes on 64-bit HotSpot) + elements is a multiple of 64 bytes. Objects are
//   read whole, element by element (byte[] through a little-endian ByteBuffer: 8-byte loads once compiled),
//   many times during their life: samples land anywhere in them and watchpoints on them trap soon.
// - Templates, scratch buffers and bookkeeping are allocated once at start-up (outside any site's calling
//   context), so the only arrays of 1 KiB or more allocated while the workers run are the sites' objects, the
//   JDK's own buffers inside the serialisation site (see serializeSnapshotCopy), and the rare growth of a truth
//   table.
//
// Scale: every worker owns 64 live objects per site and replaces one object of every site each --churn-ms
// (10 ms): with 4 workers a site allocates about 400 objects a second, each living about 0.64 s (several GCs
// under --gc-pressure) and read thousands of times. Memory: the live objects take about 8 MiB; the truth keeps
// 20-40 bytes per distinct object (about 3 MiB per minute with the defaults).

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

public final class JavaReplicas {
    private JavaReplicas() {}

    // Little-endian 8-byte words in byte arrays, by hand, for the code that runs at start-up (templates, the
    // sites, the truth): a VarHandle or ByteBuffer costs 10-20 times as much while a method is still interpreted,
    // which on a loaded 2-core machine (compiler threads starved by the workers) stretched the start-up by
    // seconds. The hot read loop (readBytes) uses a ByteBuffer: compiled, it is several times faster.
    static void putLong(byte[] array, int offset, long value) {
        array[offset] = (byte) value;
        array[offset + 1] = (byte) (value >>> 8);
        array[offset + 2] = (byte) (value >>> 16);
        array[offset + 3] = (byte) (value >>> 24);
        array[offset + 4] = (byte) (value >>> 32);
        array[offset + 5] = (byte) (value >>> 40);
        array[offset + 6] = (byte) (value >>> 48);
        array[offset + 7] = (byte) (value >>> 56);
    }

    static long getLong(byte[] array, int offset) {
        return (array[offset] & 0xffL) | (array[offset + 1] & 0xffL) << 8 | (array[offset + 2] & 0xffL) << 16
                | (array[offset + 3] & 0xffL) << 24 | (array[offset + 4] & 0xffL) << 32
                | (array[offset + 5] & 0xffL) << 40 | (array[offset + 6] & 0xffL) << 48
                | (long) array[offset + 7] << 56;
    }

    // Element counts: 16-byte array header + elements = a multiple of 64 bytes.
    static final int INPUT_FILE_BYTES = 6128;        // byte[6128]: 6 KiB object
    static final int SPECTRUM_LENGTH = 510;          // double[510]: 4 KiB
    static final int SNAPSHOT_COUNTERS = 640;        // serialised snapshot: about 3.6 KiB of bytes
    static final int ROUTING_TABLE_LENGTH = 1020;    // int[1020]: 4 KiB
    static final int RANDOM_PAYLOAD_BYTES = 8176;    // byte[8176]: 8 KiB
    static final int SPARSE_SIGNATURE_LENGTH = 510;  // long[510]: 4 KiB
    static final int MESSAGE_MIN_LINES = 17;         // byte[64 k - 16], k in [17, 128]: 1088 B - 8 KiB objects
    static final int MESSAGE_MAX_LINES = 128;

    static final int SPECTRUM_SAME_INPUT_PER_MILLE = 900; // 90 % of calls see the unchanged data set
    static final int ROUTING_EXACT_PERCENT = 70;          // 70 % exact copies of the template
    // The others differ in 16 of 1020 elements, spread out: few enough to be partial replicas (every comparison
    // of a partial copy is more likely equal than not), enough that a 64-byte comparison window sees a difference
    // about one time in five, so that a sampling profiler can measure alpha. With 3 changed elements it would see
    // one in twenty, and a few-second run has no evidence that the copies are not exact.
    static final int ROUTING_CHANGED_ELEMENTS = 16;

    static final int LIVE_OBJECTS_PER_SITE = 64;          // per site per worker
    static final int REPLY_HEADER_BYTES = 4096 - 16;        // the transient site's arrays: 4 KiB with the header
    static final int REPLY_HEADERS_PER_CHURN = 8;          // its objects per worker and churn period, none kept

    // ---- Deterministic randomness ------------------------------------------------------------------------------

    // SplitMix64's finalizer: a bijection on 64-bit words with full avalanche.
    static long mix64(long x) {
        x += 0x9e3779b97f4a7c15L;
        x = (x ^ (x >>> 30)) * 0xbf58476d1ce4e5b9L;
        x = (x ^ (x >>> 27)) * 0x94d049bb133111ebL;
        return x ^ (x >>> 31);
    }

    static final class Rng {
        private long state;

        Rng(long seed) { state = mix64(seed); }

        long next() { return mix64(state += 0x9e3779b97f4a7c15L); }

        int below(int bound) { return (int) Long.remainderUnsigned(next(), bound); }
    }

    // The generator for object `sequence` of site `site`: contents depend on the seed and the object's place in
    // its site's allocation order, never on which thread allocated it.
    static Rng objectRandom(long seed, long site, long sequence) {
        return new Rng(seed ^ mix64((site << 48) ^ sequence));
    }

    // ---- What the planted sites copy from (built once before any worker starts) --------------------------------

    // An unchanged configuration object that the program serialises again and again.
    static final class Snapshot implements Serializable {
        private static final long serialVersionUID = 1L;
        final String name;
        final long version;
        final int[] counters;
        final double[] weights;
        final String[] tags;

        Snapshot(String name, long version, int[] counters, double[] weights, String[] tags) {
            this.name = name;
            this.version = version;
            this.counters = counters;
            this.weights = weights;
            this.tags = tags;
        }
    }

    static final class ContentSource {
        final long seed;
        final byte[] inputFile = new byte[INPUT_FILE_BYTES];
        final byte[] replyTemplate = new byte[REPLY_HEADER_BYTES];
        final double[] spectrumInput = new double[SPECTRUM_LENGTH];
        final int[] routingTemplate = new int[ROUTING_TABLE_LENGTH];
        final Snapshot snapshot;
        final int serializedBytes;

        ContentSource(long seed) {
            this.seed = seed;
            Rng random = new Rng(seed ^ 0x74656d706c617465L);
            for (int i = 0; i < INPUT_FILE_BYTES; i += 8) putLong(inputFile, i, random.next());
            for (int i = 0; i < REPLY_HEADER_BYTES; i += 8) putLong(replyTemplate, i, random.next());
            fillDataSet(spectrumInput, random);
            for (int i = 0; i < ROUTING_TABLE_LENGTH; ++i) routingTemplate[i] = (int) random.next();
            int[] counters = new int[SNAPSHOT_COUNTERS];
            for (int i = 0; i < counters.length; ++i) counters[i] = (int) random.next();
            double[] weights = new double[48];
            fillDataSet(weights, random);
            String[] tags = new String[12];
            for (int i = 0; i < tags.length; ++i) tags[i] = "tag-" + i + "-" + Long.toHexString(random.next());
            snapshot = new Snapshot("replicas-config-" + Long.toHexString(random.next()), seed, counters, weights,
                    tags);
            serializedBytes = measureSerializedBytes(snapshot);
        }
    }

    static void fillDataSet(double[] values, Rng random) {
        for (int i = 0; i < values.length; ++i) values[i] = (random.next() >>> 11) * 0x1.0p-53 * 100.0 - 50.0;
    }

    static int measureSerializedBytes(Snapshot snapshot) {
        final long[] count = {0};
        OutputStream counter = new OutputStream() {
            @Override public void write(int b) { ++count[0]; }
            @Override public void write(byte[] b, int off, int len) { count[0] += len; }
        };
        try (ObjectOutputStream out = new ObjectOutputStream(counter)) {
            out.writeObject(snapshot);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return (int) count[0];
    }

    // ---- Planted sites ---------------------------------------------------------------------------------------

    // A reader that reads the same in-memory "file" into a fresh buffer on every call: every object is a copy of
    // the one input (largest-group ratio 1.0).
    static byte[] refillInputBuffer(byte[] file) {
        ByteArrayInputStream in = new ByteArrayInputStream(file);
        byte[] buffer = new byte[file.length];
        int filled = 0;
        while (filled < buffer.length) {
            int n = in.read(buffer, filled, buffer.length - filled);
            if (n < 0) throw new IllegalStateException("input ended early");
            filled += n;
        }
        return buffer;
    }

    // Every object a copy of one reply template, built, read and dropped at once (none is kept): as replicated as
    // refillInputBuffer, yet never more than one per thread alive. Sharing it saves allocation churn, not heap.
    static byte[] formatReplyHeader(byte[] template) {
        return Arrays.copyOf(template, template.length);
    }

    // Recomputes a result from its input on every call and returns it in a fresh array. The caller passes the
    // unchanged data set 90 % of the time (the same result again) and a new data set otherwise (a unique result):
    // largest-group ratio about 0.9. Only +, * and / (exact IEEE arithmetic, no intrinsics that could differ
    // between interpreter and compiled code).
    static double[] computeSpectrumResult(double[] input) {
        double[] result = new double[input.length];
        double smoothed = 0;
        double total = 0;
        for (int i = 0; i < input.length; ++i) {
            smoothed = smoothed * 0.75 + input[i] * 0.25;
            total += input[i] * input[i];
            result[i] = smoothed / (1.0 + total / (i + 1));
        }
        return result;
    }

    // Serialises an object that never changes: every result is the same bytes (largest-group ratio 1.0). The
    // array is allocated by Arrays.copyOf inside ByteArrayOutputStream.toByteArray. The stream's own buffer (sized
    // to fit, so it never grows) and ObjectOutputStream's 1 KiB block buffer are also arrays of 1 KiB or more in
    // this site's calling context; they end up with the same contents on every call too, but are not in the truth.
    static byte[] serializeSnapshotCopy(Snapshot snapshot, int capacity) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(capacity);
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(snapshot);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    // Partial replicas: a private copy of a routing table; 70 % of the copies are exact, the others have 3
    // elements changed (each such copy unique). Largest-group ratio about 0.7, although any two copies agree in
    // all but a few elements: a comparison of one word or one 64-byte window usually sees them equal.
    static int[] cloneRoutingTable(int[] template, Rng draws) {
        int[] table = template.clone();
        if (draws.below(100) >= ROUTING_EXACT_PERCENT) {
            int index = draws.below(table.length);
            for (int k = 0; k < ROUTING_CHANGED_ELEMENTS; ++k) { // distinct indices, each XORed with nonzero bits
                table[index] ^= (int) (draws.next() | 1);
                index = (index + 1 + draws.below(table.length / ROUTING_CHANGED_ELEMENTS)) % table.length;
            }
        }
        return table;
    }

    // ---- Control sites: every object differs (largest-group ratio 1/X) ---------------------------------------

    // Random bytes, and the most-read site (see SITES) so that a control gets at least as many samples as any
    // planted site.
    static byte[] fillRandomPayload(Rng random) {
        byte[] payload = new byte[RANDOM_PAYLOAD_BYTES];
        for (int i = 0; i < payload.length; i += 8) putLong(payload, i, random.next());
        return payload;
    }

    // The hard negative: arrays that are almost all zero and look alike, but no two are identical. Every aligned
    // group of 4 elements (32 bytes) holds one nonzero random word at a random place, the rest zero. ojx compares
    // the word a trap lands on and a digest of the 64-byte window around it. Every 64-byte window that starts at
    // an 8-byte boundary contains a whole group, so two such arrays differ in every window, whether windows are
    // aligned to the object's header or to its first element (16 bytes apart) or not aligned at all; a one-word
    // comparison sees zero against zero 9 times in 16. (native_replicas can do with one word per 64-byte line
    // because its windows and lines coincide; a Java array's elements start 16 bytes into the object.) The last
    // group has two elements (510 = 127 * 4 + 2) and holds a random word too, so a window clipped at the
    // object's end differs as well (unless it is a single word).
    static long[] buildSparseSignature(Rng random) {
        long[] words = new long[SPARSE_SIGNATURE_LENGTH];
        for (int group = 0; group < words.length; group += 4) {
            int span = Math.min(4, words.length - group);
            words[group + random.below(span)] = random.next() | 1;
        }
        return words;
    }

    // Messages of 1-8 KiB: a header with the message number and length, then random payload. Objects of
    // different sizes differ without looking; equal-sized ones differ in content.
    static byte[] encodeMessageFrame(long sequence, Rng random) {
        int lines = MESSAGE_MIN_LINES + random.below(MESSAGE_MAX_LINES - MESSAGE_MIN_LINES + 1);
        byte[] frame = new byte[64 * lines - 16];
        putLong(frame, 0, sequence);
        putLong(frame, 8, frame.length);
        for (int i = 16; i < frame.length; i += 8) putLong(frame, i, random.next());
        return frame;
    }

    // ---- The site table ------------------------------------------------------------------------------------------

    static final class Site {
        final String function;     // the allocating method, as a profile's frames name it
        final String role;         // "planted" or "control"
        final String kind;         // what kind of replication (or none)
        final String type;         // the allocated array type
        final String allocator;    // how the objects are allocated
        final String contents;     // what the objects hold
        final double designRatio;  // the largest-group ratio the site is built for (the truth is measured)
        final int readsPerRound;   // objects read per worker round: how hot the site is
        // 0: the site keeps LIVE_OBJECTS_PER_SITE objects per worker, replacing one each churn period. Else a
        // transient site: this many objects each churn period, each read and dropped at once.
        final int transientPerChurn;

        Site(String function, String role, String kind, String type, String allocator, String contents,
             double designRatio, int readsPerRound) {
            this(function, role, kind, type, allocator, contents, designRatio, readsPerRound, 0);
        }

        Site(String function, String role, String kind, String type, String allocator, String contents,
             double designRatio, int readsPerRound, int transientPerChurn) {
            this.function = function;
            this.role = role;
            this.kind = kind;
            this.type = type;
            this.allocator = allocator;
            this.contents = contents;
            this.designRatio = designRatio;
            this.readsPerRound = readsPerRound;
            this.transientPerChurn = transientPerChurn;
        }
    }

    static final int REFILL = 0, SPECTRUM = 1, SERIALIZE = 2, ROUTING = 3, RANDOM = 4, SPARSE = 5, MESSAGE = 6,
            REPLY = 7;

    static final Site[] SITES = {
        new Site("refillInputBuffer", "planted", "identical", "byte[]",
                "new byte[] filled by ByteArrayInputStream.read",
                "every object a copy of one 6 KiB in-memory input file", 1.0, 1),
        new Site("computeSpectrumResult", "planted", "mostly-identical", "double[]", "new double[]",
                "result recomputed from an unchanged data set 90 % of calls, from a new data set otherwise", 0.9, 1),
        new Site("serializeSnapshotCopy", "planted", "serialized", "byte[]",
                "ObjectOutputStream -> ByteArrayOutputStream.toByteArray (leaf java.util.Arrays.copyOf)",
                "serialised bytes of one unchanged Serializable object", 1.0, 1),
        new Site("cloneRoutingTable", "planted", "partial", "int[]", "int[].clone()",
                "70 % exact copies of a template, 30 % with 16 of 1020 elements changed (each unique)",
                ROUTING_EXACT_PERCENT / 100.0, 1),
        new Site("fillRandomPayload", "control", "random", "byte[]", "new byte[]",
                "random bytes; the most-read site", 0.0, 2),
        new Site("buildSparseSignature", "control", "hard-negative", "long[]", "new long[]",
                "zero except one random word per aligned 32-byte group (hard negative)", 0.0, 1),
        new Site("encodeMessageFrame", "control", "variable-size", "byte[]", "new byte[]",
                "1-8 KiB, sequence number, length and random payload", 0.0, 1),
        new Site("formatReplyHeader", "planted", "transient", "byte[]", "Arrays.copyOf",
                "every object a copy of one 4 KiB reply template, 8 a churn period per worker, each dropped at once"
                        + " (none kept)", 1.0, 0, REPLY_HEADERS_PER_CHURN),
    };

    // Calls every site method from exactly one place each.
    static Object allocateForSite(int site, long sequence, ContentSource source, Worker worker) {
        switch (site) {
            case REFILL:
                return refillInputBuffer(source.inputFile);
            case SPECTRUM: {
                Rng draws = objectRandom(source.seed, SPECTRUM, sequence);
                double[] input = source.spectrumInput;
                if (draws.below(1000) >= SPECTRUM_SAME_INPUT_PER_MILLE) {
                    input = worker.freshDataSet;
                    fillDataSet(input, draws);
                }
                return computeSpectrumResult(input);
            }
            case SERIALIZE:
                return serializeSnapshotCopy(source.snapshot, source.serializedBytes);
            case ROUTING:
                return cloneRoutingTable(source.routingTemplate, objectRandom(source.seed, ROUTING, sequence));
            case RANDOM:
                return fillRandomPayload(objectRandom(source.seed, RANDOM, sequence));
            case SPARSE:
                return buildSparseSignature(objectRandom(source.seed, SPARSE, sequence));
            case MESSAGE:
                return encodeMessageFrame(sequence, objectRandom(source.seed, MESSAGE, sequence));
            case REPLY:
                return formatReplyHeader(source.replyTemplate);
            default:
                throw new IllegalArgumentException("no site " + site);
        }
    }

    // ---- Truth: exact grouping of every object a site allocated ------------------------------------------------

    // Counts the objects of one site by content: a 128-bit key (the first half of the SHA-256 of the element type,
    // the length and the elements' bytes) and how many objects had it, in an open-addressing table. Two objects are
    // taken as identical when their keys agree; a collision between different contents has probability about
    // 2^-128 per pair.
    static final class GroupCounter {
        private long[] keysA;
        private long[] keysB;
        private int[] counts;
        private int groups;
        long objects;
        long bytes;
        int minBytes = Integer.MAX_VALUE;
        int maxBytes;
        final BitSet sizes = new BitSet();

        GroupCounter(int expectedGroups) {
            int capacity = Integer.highestOneBit(Math.max(64, expectedGroups) * 2 - 1) * 2;
            allocate(capacity);
        }

        private void allocate(int capacity) {
            keysA = new long[capacity];
            keysB = new long[capacity];
            counts = new int[capacity];
        }

        synchronized void add(long a, long b, int payloadBytes) {
            ++objects;
            bytes += payloadBytes;
            minBytes = Math.min(minBytes, payloadBytes);
            maxBytes = Math.max(maxBytes, payloadBytes);
            sizes.set(payloadBytes);
            if (insert(a, b, 1)) {
                ++groups;
                if (groups * 4L > counts.length * 3L) grow();
            }
        }

        // Adds `count` to key (a, b); returns whether the key is new.
        private boolean insert(long a, long b, int count) {
            int mask = counts.length - 1;
            for (int i = (int) (a ^ (a >>> 32)) & mask;; i = (i + 1) & mask) {
                if (counts[i] == 0) {
                    keysA[i] = a;
                    keysB[i] = b;
                    counts[i] = count;
                    return true;
                }
                if (keysA[i] == a && keysB[i] == b) {
                    counts[i] += count;
                    return false;
                }
            }
        }

        private void grow() {
            long[] oldA = keysA;
            long[] oldB = keysB;
            int[] oldCounts = counts;
            allocate(oldCounts.length * 2);
            for (int i = 0; i < oldCounts.length; ++i)
                if (oldCounts[i] != 0) insert(oldA[i], oldB[i], oldCounts[i]);
        }

        synchronized SiteTruth summarize() {
            SiteTruth truth = new SiteTruth();
            truth.objects = objects;
            truth.bytes = bytes;
            truth.minBytes = objects == 0 ? 0 : minBytes;
            truth.maxBytes = maxBytes;
            truth.distinctSizes = sizes.cardinality();
            truth.groups = groups;
            double identicalPairs = 0;
            for (int count : counts) {
                truth.largestGroup = Math.max(truth.largestGroup, count);
                identicalPairs += (double) count * (count - 1);
            }
            double x = objects;
            truth.largestGroupRatio = objects == 0 ? 0 : truth.largestGroup / x;
            truth.identicalPairFraction = objects > 1 ? identicalPairs / (x * (x - 1)) : objects; // one object: 1
            return truth;
        }
    }

    static final class SiteTruth {
        long objects, bytes, groups, largestGroup;
        int minBytes, maxBytes, distinctSizes;
        double largestGroupRatio;      // X_N / X
        double identicalPairFraction;  // fraction of all pairs of objects that are identical (the true theta)
    }

    // ---- Workers ---------------------------------------------------------------------------------------------

    static final class Shared {
        final ContentSource source;
        final AtomicLong[] nextSequence = new AtomicLong[SITES.length];
        final GroupCounter[] counters = new GroupCounter[SITES.length];
        final AtomicLong[] objectReads = new AtomicLong[SITES.length];
        final AtomicLong checksum = new AtomicLong();
        final AtomicLong garbageBytes = new AtomicLong();
        volatile boolean stop;

        Shared(ContentSource source, int expectedObjects) {
            this.source = source;
            for (int s = 0; s < SITES.length; ++s) {
                nextSequence[s] = new AtomicLong();
                objectReads[s] = new AtomicLong();
                counters[s] = new GroupCounter(expectedObjects);
            }
        }
    }

    static final int GARBAGE_PER_ROUND = 2;
    static final int SHORT_LIVED_RING = 64;
    static final int MEDIUM_LIVED_RING = 1024;

    static final class Worker implements Runnable {
        final int index;
        final long churnNanos;
        final boolean gcPressure;
        final Shared shared;
        final Rng random;
        final Object[][] pools = new Object[SITES.length][LIVE_OBJECTS_PER_SITE];
        final long[] reads = new long[SITES.length];
        // Scratch, allocated once here (outside every site's calling context).
        final double[] freshDataSet = new double[SPECTRUM_LENGTH];
        final byte[] digestInput = new byte[8192];
        final ByteBuffer digestBuffer = ByteBuffer.wrap(digestInput).order(ByteOrder.LITTLE_ENDIAN);
        final byte[] digestOutput = new byte[32];
        final MessageDigest sha256;
        final Object[] shortLived;
        final Object[] mediumLived;
        long garbageCursor;
        long garbageBytes;

        Worker(int index, long seed, double churnMs, boolean gcPressure, Shared shared) {
            this.index = index;
            this.churnNanos = (long) (churnMs * 1e6);
            this.gcPressure = gcPressure;
            this.shared = shared;
            this.random = new Rng(seed ^ mix64(0x776f726bL ^ index));
            this.shortLived = gcPressure ? new Object[SHORT_LIVED_RING] : null;
            this.mediumLived = gcPressure ? new Object[MEDIUM_LIVED_RING] : null;
            try {
                sha256 = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }

        // Fills every pool first (one object of every site per pass), then loops: one round of reads over all
        // sites, and every churn period one object replaced in each site. Filling and churn go through the same
        // call of replaceObject, so that a site's objects all have one calling context.
        @Override
        public void run() {
            long checksum = 0;
            int nextFill = 0;
            long nextChurn = System.nanoTime();
            while (!shared.stop) {
                boolean filling = nextFill < LIVE_OBJECTS_PER_SITE;
                if (filling || System.nanoTime() - nextChurn >= 0) {
                    for (int s = 0; s < SITES.length; ++s) {
                        if (SITES[s].transientPerChurn != 0) {
                            if (!filling) checksum += useTransientObjects(s);
                            continue;
                        }
                        int slot = filling ? nextFill : random.below(LIVE_OBJECTS_PER_SITE);
                        replaceObject(s, slot);
                    }
                    if (filling) {
                        ++nextFill;
                        nextChurn = System.nanoTime() + churnNanos;
                        continue; // no reads until the pools are full: fast start while still interpreted
                    } else {
                        nextChurn += churnNanos;
                    }
                }
                if (gcPressure) makeShortLivedGarbage();
                for (int s = 0; s < SITES.length; ++s) {
                    Object[] pool = pools[s];
                    for (int r = 0; r < SITES[s].readsPerRound; ++r) {
                        Object object = pool[random.below(LIVE_OBJECTS_PER_SITE)];
                        if (object != null) checksum += readObject(object);
                        ++reads[s];
                    }
                }
            }
            shared.checksum.addAndGet(checksum);
            shared.garbageBytes.addAndGet(garbageBytes);
            for (int s = 0; s < SITES.length; ++s) shared.objectReads[s].addAndGet(reads[s]);
        }

        // A transient site's objects for one churn period: each allocated, recorded, read and dropped at once.
        long useTransientObjects(int site) {
            long sum = 0;
            for (int i = 0; i < SITES[site].transientPerChurn; ++i) {
                Object fresh = allocateForSite(site, shared.nextSequence[site].getAndIncrement(), shared.source, this);
                recordTruth(site, fresh);
                sum += readObject(fresh);
                ++reads[site];
            }
            return sum;
        }

        // Allocates the site's next object, records its contents for the truth, and puts it in the slot.
        void replaceObject(int site, int slot) {
            long sequence = shared.nextSequence[site].getAndIncrement();
            Object fresh = allocateForSite(site, sequence, shared.source, this);
            recordTruth(site, fresh);
            pools[site][slot] = fresh;
        }

        void recordTruth(int site, Object object) {
            MessageDigest sha = sha256;
            sha.reset();
            byte[] scratch = digestInput;
            int payloadBytes;
            if (object instanceof byte[]) {
                byte[] array = (byte[]) object;
                payloadBytes = array.length;
                digestHeader(sha, 'B', array.length);
                sha.update(array);
            } else if (object instanceof int[]) {
                int[] array = (int[]) object;
                payloadBytes = array.length * 4;
                digestHeader(sha, 'I', array.length);
                digestBuffer.clear();
                digestBuffer.asIntBuffer().put(array);
                sha.update(scratch, 0, payloadBytes);
            } else if (object instanceof long[]) {
                long[] array = (long[]) object;
                payloadBytes = array.length * 8;
                digestHeader(sha, 'J', array.length);
                digestBuffer.clear();
                digestBuffer.asLongBuffer().put(array);
                sha.update(scratch, 0, payloadBytes);
            } else if (object instanceof double[]) {
                double[] array = (double[]) object;
                payloadBytes = array.length * 8;
                digestHeader(sha, 'D', array.length);
                digestBuffer.clear();
                digestBuffer.asDoubleBuffer().put(array); // a bulk copy: the raw bits, NaNs untouched
                sha.update(scratch, 0, payloadBytes);
            } else {
                throw new IllegalStateException("unexpected object " + object.getClass());
            }
            try {
                sha.digest(digestOutput, 0, digestOutput.length);
            } catch (java.security.DigestException e) {
                throw new IllegalStateException(e);
            }
            shared.counters[site].add(getLong(digestOutput, 0), getLong(digestOutput, 8),
                    payloadBytes);
        }

        private void digestHeader(MessageDigest sha, char type, int length) {
            byte[] header = digestOutput; // reused: the digest is written over it afterwards
            header[0] = (byte) type;
            header[1] = (byte) length;
            header[2] = (byte) (length >>> 8);
            header[3] = (byte) (length >>> 16);
            header[4] = (byte) (length >>> 24);
            sha.update(header, 0, 5);
        }

        // Short-lived objects, all well under 1 KiB (so ojx, at its default threshold, tracks none of them): about
        // 1.5 KiB in 8 objects per round, 100-300 MB/s in all once compiled. Every group goes into a ring of 64
        // slots (it must escape, or the JIT would not allocate it at all) and dies soon after; one group in 8 also
        // goes into a ring of 1024 slots and lives for about 4000 rounds: long enough to survive a young
        // collection or two and be copied (and now and then promoted, so that old collections happen too).
        void makeShortLivedGarbage() {
            for (int k = 0; k < GARBAGE_PER_ROUND; ++k) {
                long n = garbageCursor++;
                int size = 64 + (int) Long.remainderUnsigned(n * 0x9e3779b97f4a7c15L, 897); // 64-960 bytes
                byte[] bytes = new byte[size];
                bytes[0] = (byte) n;
                long[] words = new long[24];
                words[0] = n;
                String text = new StringBuilder(32).append("garbage-").append(index).append('-').append(n).toString();
                Object[] group = {bytes, words, text, null};
                shortLived[(int) (n & (SHORT_LIVED_RING - 1))] = group;
                if ((n & 7) == 0) mediumLived[(int) ((n >>> 3) & (MEDIUM_LIVED_RING - 1))] = group;
                garbageBytes += 16 + size + 16 + 24 * 8 + 24 + 16 + 48 + 16 + 32 + 16 + 32 + 32; // about
            }
        }
    }

    // Reads the whole object, element by element (8 bytes at a time for byte[]); returns a sum of its words.
    static long readObject(Object object) {
        if (object instanceof byte[]) return readBytes((byte[]) object);
        if (object instanceof long[]) return readLongs((long[]) object);
        if (object instanceof int[]) return readInts((int[]) object);
        return readDoubles((double[]) object);
    }

    static long readBytes(byte[] array) {
        ByteBuffer words = ByteBuffer.wrap(array).order(ByteOrder.LITTLE_ENDIAN);
        long sum = 0;
        int end = array.length & ~7;
        for (int i = 0; i < end; i += 8) sum += words.getLong(i);
        return sum;
    }

    static long readLongs(long[] array) {
        long sum = 0;
        for (long word : array) sum += word;
        return sum;
    }

    static long readInts(int[] array) {
        long sum = 0;
        for (int i = 0; i + 1 < array.length; i += 2) sum += array[i] ^ ((long) array[i + 1] << 32);
        return sum;
    }

    static long readDoubles(double[] array) {
        long sum = 0;
        for (double value : array) sum += Double.doubleToRawLongBits(value);
        return sum;
    }

    // ---- Options, main, truth file ---------------------------------------------------------------------------

    static final class Options {
        double seconds = 4.0;
        int threads = 4;
        long seed = 1;
        double churnMs = 10.0;
        String truthPath;
        boolean gcPressure;
    }

    static final String USAGE =
        "usage: java JavaReplicas [--seconds S] [--threads N] [--seed N] [--churn-ms MS] [--truth FILE]"
            + " [--gc-pressure]\n"
            + "  --seconds S     how long to run (default 4, or $JAVA_REPLICAS_SECONDS)\n"
            + "  --threads N     worker threads (default 4)\n"
            + "  --seed N        seed of all contents (default 1)\n"
            + "  --churn-ms MS   each worker replaces one object of every site this often (default 10)\n"
            + "  --truth FILE    write the ground truth (JSON) to FILE at exit\n"
            + "  --gc-pressure   also allocate short-lived garbage (objects under 1 KiB) so that a small heap\n"
            + "                  (e.g. -Xmx64m) collects often\n";

    static Options parseOptions(String[] args) {
        Options options = new Options();
        String env = System.getenv("JAVA_REPLICAS_SECONDS");
        if (env != null && !env.isEmpty()) {
            Double seconds = parseDouble(env);
            if (seconds == null || !(seconds > 0) || !(seconds < 1e6)) {
                System.err.println("JavaReplicas: JAVA_REPLICAS_SECONDS must be a positive number, got '" + env + "'");
                return null;
            }
            options.seconds = seconds;
        }
        for (int i = 0; i < args.length; ++i) {
            String arg = args[i];
            if (arg.equals("--help") || arg.equals("-h")) {
                System.out.print(USAGE);
                System.exit(0);
            }
            if (arg.equals("--gc-pressure")) {
                options.gcPressure = true;
                continue;
            }
            if (!List.of("--seconds", "--threads", "--seed", "--churn-ms", "--truth").contains(arg)) {
                System.err.print("JavaReplicas: unknown option '" + arg + "'\n" + USAGE);
                return null;
            }
            if (i + 1 >= args.length) {
                System.err.println("JavaReplicas: " + arg + " needs a value");
                return null;
            }
            String text = args[++i];
            boolean valid = true;
            switch (arg) {
                case "--truth":
                    options.truthPath = text;
                    break;
                case "--seed":
                    try {
                        options.seed = Long.parseUnsignedLong(text);
                    } catch (NumberFormatException e) {
                        valid = false;
                    }
                    break;
                case "--threads":
                    try {
                        options.threads = Integer.parseInt(text);
                        valid = options.threads >= 1 && options.threads <= 256;
                    } catch (NumberFormatException e) {
                        valid = false;
                    }
                    break;
                default: {
                    Double value = parseDouble(text);
                    valid = value != null && value > 0 && value < 1e6;
                    if (valid && arg.equals("--seconds")) options.seconds = value;
                    else if (valid) options.churnMs = value;
                }
            }
            if (!valid) {
                System.err.println("JavaReplicas: invalid value '" + text + "' for " + arg);
                return null;
            }
        }
        return options;
    }

    static Double parseDouble(String text) {
        try {
            double value = Double.parseDouble(text);
            return Double.isFinite(value) ? value : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    public static void main(String[] args) throws Exception {
        Options options = parseOptions(args);
        if (options == null) System.exit(2);

        ContentSource source = new ContentSource(options.seed);
        double churnPerSecond = 1000.0 / options.churnMs;
        long expected = (long) (LIVE_OBJECTS_PER_SITE * options.threads
                + options.threads * churnPerSecond * (options.seconds + 1.0));
        // Sized up front so that the tables rarely grow while the workers run (each growth allocates arrays of
        // 1 KiB or more, in a calling context that names no site); capped to keep long runs small.
        Shared shared = new Shared(source, (int) Math.min(expected, 1 << 14));

        long gcCountBefore = gcCount();
        long start = System.nanoTime();
        Thread[] threads = new Thread[options.threads];
        for (int i = 0; i < options.threads; ++i) {
            Worker worker = new Worker(i, options.seed, options.churnMs, options.gcPressure, shared);
            threads[i] = new Thread(worker, "replicas-worker-" + i);
        }
        for (Thread thread : threads) thread.start();
        long deadline = start + (long) (options.seconds * 1e9);
        for (long left; (left = deadline - System.nanoTime()) > 0;) Thread.sleep(Math.max(1, left / 1_000_000));
        shared.stop = true;
        for (Thread thread : threads) thread.join();
        double elapsed = (System.nanoTime() - start) / 1e9;
        long collections = gcCount() - gcCountBefore;

        SiteTruth[] truths = new SiteTruth[SITES.length];
        long totalObjects = 0;
        for (int s = 0; s < SITES.length; ++s) {
            truths[s] = shared.counters[s].summarize();
            totalObjects += truths[s].objects;
        }

        StringBuilder line = new StringBuilder();
        line.append(String.format(Locale.ROOT, "JavaReplicas: %d threads, %.2f s, seed %s, gc-pressure %s, "
                        + "%d objects, %d GCs, checksum %016x; largest-group ratio:", options.threads, elapsed,
                Long.toUnsignedString(options.seed), options.gcPressure ? "on" : "off", totalObjects, collections,
                shared.checksum.get()));
        for (int s = 0; s < SITES.length; ++s)
            line.append(String.format(Locale.ROOT, " %s %s %.4f (%d)", SITES[s].function, SITES[s].role,
                    truths[s].largestGroupRatio, truths[s].objects));
        System.out.println(line);

        if (options.truthPath != null) {
            try {
                writeTruth(options, elapsed, collections, shared, source, truths);
            } catch (IOException e) {
                System.err.println("JavaReplicas: cannot write " + options.truthPath + ": " + e);
                System.exit(1);
            }
        }
    }

    static long gcCount() {
        long total = 0;
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans())
            total += Math.max(0, bean.getCollectionCount());
        return total;
    }

    static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20) out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            else out.append(c);
        }
        return out.append('"').toString();
    }

    static String number(double value) {
        return String.format(Locale.ROOT, "%.9g", value).replaceFirst("\\.?0+(e|$)", "$1");
    }

    static void writeTruth(Options options, double elapsed, long collections, Shared shared, ContentSource source,
                           SiteTruth[] truths) throws IOException {
        StringBuilder out = new StringBuilder();
        out.append("{\n  \"java_replicas_truth_version\": 1,\n");
        out.append(String.format(Locale.ROOT,
                "  \"seed\": %s, \"threads\": %d, \"seconds\": %.3f, \"elapsed_seconds\": %.3f, \"churn_ms\": %.3f,"
                        + " \"live_objects_per_site\": %d, \"live_objects_per_site_per_thread\": %d,\n",
                Long.toUnsignedString(options.seed), options.threads, options.seconds, elapsed, options.churnMs,
                LIVE_OBJECTS_PER_SITE * options.threads, LIVE_OBJECTS_PER_SITE));
        out.append(String.format(Locale.ROOT,
                "  \"gc_pressure\": %b, \"garbage_bytes_approx\": %d, \"gc_collections\": %d, \"java_version\": %s,"
                        + " \"vm\": %s,\n",
                options.gcPressure, shared.garbageBytes.get(), collections, quote(System.getProperty("java.version")),
                quote(System.getProperty("java.vm.name"))));
        out.append("  \"bytes_are\": \"element bytes of each array, without the array header\",\n");
        out.append(String.format(Locale.ROOT, "  \"checksum\": \"%016x\",\n  \"sites\": [", shared.checksum.get()));
        for (int s = 0; s < SITES.length; ++s) {
            Site site = SITES[s];
            SiteTruth truth = truths[s];
            out.append(s == 0 ? "\n" : ",\n");
            out.append(String.format(Locale.ROOT,
                    "    {\"function\": %s, \"frame\": %s, \"role\": %s, \"kind\": %s, \"type\": %s,"
                            + " \"allocator\": %s, \"contents\": %s, \"design_ratio\": %s,\n",
                    quote(site.function), quote("JavaReplicas." + site.function), quote(site.role), quote(site.kind),
                    quote(site.type), quote(site.allocator), quote(site.contents), number(site.designRatio)));
            out.append(String.format(Locale.ROOT,
                    "     \"objects\": %d, \"bytes\": %d,"
                            + " \"object_bytes\": {\"min\": %d, \"max\": %d, \"distinct\": %d},\n",
                    truth.objects, truth.bytes, truth.minBytes, truth.maxBytes, truth.distinctSizes));
            out.append(String.format(Locale.ROOT,
                    "     \"groups\": %d, \"largest_group\": %d, \"largest_group_ratio\": %s,"
                            + " \"identical_pair_fraction\": %s, \"object_reads\": %d, \"kept_alive\": %d}",
                    truth.groups, truth.largestGroup, number(truth.largestGroupRatio),
                    number(truth.identicalPairFraction), shared.objectReads[s].get(),
                    site.transientPerChurn != 0 ? 0 : LIVE_OBJECTS_PER_SITE * options.threads));
        }
        out.append("\n  ]\n}\n");
        Files.write(Paths.get(options.truthPath), out.toString().getBytes(StandardCharsets.UTF_8));
    }
}
