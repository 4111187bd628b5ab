// JavaCopies: the Java test subject of ojx's copy profiling (copies=N in libojx.so). An ordinary single-threaded
// Java program with no ojx dependency; it runs the same with or without the agent. The Java counterpart of
// tests/linux/copy_program.cpp: objects of some allocation sites are copied whole into objects of others, the
// way Java programs copy, and controls read objects of their own sites and compute instead of copying.
//
//   java JavaCopies [--seconds S]
//
// Planted copies (source site -> destination site, each site a static method named for it):
//   1. System.arraycopy (HotSpot's arraycopy stub once compiled): makeArraycopySource -> makeArraycopyTarget, a
//      pool of reused destination buffers;
//   2. Arrays.copyOf (C2's intrinsic: the allocation and the arraycopy stub): makeCopyOfSource ->
//      duplicateByCopyOf (frames java.util.Arrays.copyOf <- JavaCopies.duplicateByCopyOf);
//   3. ByteArrayOutputStream.toByteArray: the stream's buffer, allocated in its constructor called from
//      makeStreamBuffer -> snapshotStream (frames Arrays.copyOf <- ByteArrayOutputStream.toByteArray <-
//      JavaCopies.snapshotStream);
//   4. a field-by-field copy constructor, Wide(Wide) over 256 long fields: makeWideOriginal -> copyWide;
//   5. a copy through a temporary object, element by element both ways (C2 vectorises both loops):
//      makeRelaySource -> makeRelayTemp -> makeRelayTarget (two edges; the targets a pool, as 1's).
// Controls (no copy out of their objects): makeSummedArray (summed), makeHashedBytes (hashed),
// makeTransformSource (x * 3 + 1 stored into makeTransformed's fresh arrays), makeMixedRecord (a Wide whose
// fields are hashed).
//
// Design points, each for the profiler's sake:
// - Every object of a site is at least 1 KiB with its header (ojx tracks objects of at least 1 KiB by default):
//   arrays of 16 KiB (16-byte header + 16368 bytes of elements), Wide 2064 bytes (header + 256 longs). Large
//   objects, so that copying them outweighs the agent's work at each allocation.
// - The activities run in turn, each for its slices (SLICES) of 10 ms; the copy and compute methods are called
//   thousands of times a second and are compiled by C2 within the first half second (JDK 17, -XX:+PrintCompilation).
//   No -XX flag is needed.
// - Every source, pooled target and control site keeps a pool of POOL live objects, one of which is replaced at
//   each turn of its activity (each lives about a second): the copies and the fresh destinations make GB of
//   garbage a second, so under a small heap (-Xmx64m) G1 collects tens of times a second and moves the young
//   pool objects while they are read. The pools' first objects may be untracked (JDK 17 draws a thread's first
//   heap sample at JVMTI's default interval, 512 KiB); their renewals are tracked.
// - Fresh destinations escape into a ring (KEEP), so that neither allocation nor copy can be optimised away; one
//   element of each is added to a checksum printed at the end.

import java.io.ByteArrayOutputStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.Arrays;

public final class JavaCopies {
    private JavaCopies() {}

    static final int LONGS = 2046;         // long[2046]: 16 KiB with the header
    static final int INTS = 4092;          // int[4092]: 16 KiB
    static final int STREAM_BYTES = 16368; // byte[16368]: 16 KiB
    static final int POOL = 8;
    static final int KEEP = 16;
    static final long SLICE_NANOS = 10_000_000L;

    // An object of 256 long fields (2 KiB), copied field by field.
    static final class Wide {
        long f000, f001, f002, f003, f004, f005, f006, f007, f008, f009, f010, f011, f012, f013, f014, f015;
        long f016, f017, f018, f019, f020, f021, f022, f023, f024, f025, f026, f027, f028, f029, f030, f031;
        long f032, f033, f034, f035, f036, f037, f038, f039, f040, f041, f042, f043, f044, f045, f046, f047;
        long f048, f049, f050, f051, f052, f053, f054, f055, f056, f057, f058, f059, f060, f061, f062, f063;
        long f064, f065, f066, f067, f068, f069, f070, f071, f072, f073, f074, f075, f076, f077, f078, f079;
        long f080, f081, f082, f083, f084, f085, f086, f087, f088, f089, f090, f091, f092, f093, f094, f095;
        long f096, f097, f098, f099, f100, f101, f102, f103, f104, f105, f106, f107, f108, f109, f110, f111;
        long f112, f113, f114, f115, f116, f117, f118, f119, f120, f121, f122, f123, f124, f125, f126, f127;
        long f128, f129, f130, f131, f132, f133, f134, f135, f136, f137, f138, f139, f140, f141, f142, f143;
        long f144, f145, f146, f147, f148, f149, f150, f151, f152, f153, f154, f155, f156, f157, f158, f159;
        long f160, f161, f162, f163, f164, f165, f166, f167, f168, f169, f170, f171, f172, f173, f174, f175;
        long f176, f177, f178, f179, f180, f181, f182, f183, f184, f185, f186, f187, f188, f189, f190, f191;
        long f192, f193, f194, f195, f196, f197, f198, f199, f200, f201, f202, f203, f204, f205, f206, f207;
        long f208, f209, f210, f211, f212, f213, f214, f215, f216, f217, f218, f219, f220, f221, f222, f223;
        long f224, f225, f226, f227, f228, f229, f230, f231, f232, f233, f234, f235, f236, f237, f238, f239;
        long f240, f241, f242, f243, f244, f245, f246, f247, f248, f249, f250, f251, f252, f253, f254, f255;

        Wide(long seed) {
            long s = seed;
            f000 = s++; f001 = s++; f002 = s++; f003 = s++; f004 = s++; f005 = s++; f006 = s++; f007 = s++;
            f008 = s++; f009 = s++; f010 = s++; f011 = s++; f012 = s++; f013 = s++; f014 = s++; f015 = s++;
            f016 = s++; f017 = s++; f018 = s++; f019 = s++; f020 = s++; f021 = s++; f022 = s++; f023 = s++;
            f024 = s++; f025 = s++; f026 = s++; f027 = s++; f028 = s++; f029 = s++; f030 = s++; f031 = s++;
            f032 = s++; f033 = s++; f034 = s++; f035 = s++; f036 = s++; f037 = s++; f038 = s++; f039 = s++;
            f040 = s++; f041 = s++; f042 = s++; f043 = s++; f044 = s++; f045 = s++; f046 = s++; f047 = s++;
            f048 = s++; f049 = s++; f050 = s++; f051 = s++; f052 = s++; f053 = s++; f054 = s++; f055 = s++;
            f056 = s++; f057 = s++; f058 = s++; f059 = s++; f060 = s++; f061 = s++; f062 = s++; f063 = s++;
            f064 = s++; f065 = s++; f066 = s++; f067 = s++; f068 = s++; f069 = s++; f070 = s++; f071 = s++;
            f072 = s++; f073 = s++; f074 = s++; f075 = s++; f076 = s++; f077 = s++; f078 = s++; f079 = s++;
            f080 = s++; f081 = s++; f082 = s++; f083 = s++; f084 = s++; f085 = s++; f086 = s++; f087 = s++;
            f088 = s++; f089 = s++; f090 = s++; f091 = s++; f092 = s++; f093 = s++; f094 = s++; f095 = s++;
            f096 = s++; f097 = s++; f098 = s++; f099 = s++; f100 = s++; f101 = s++; f102 = s++; f103 = s++;
            f104 = s++; f105 = s++; f106 = s++; f107 = s++; f108 = s++; f109 = s++; f110 = s++; f111 = s++;
            f112 = s++; f113 = s++; f114 = s++; f115 = s++; f116 = s++; f117 = s++; f118 = s++; f119 = s++;
            f120 = s++; f121 = s++; f122 = s++; f123 = s++; f124 = s++; f125 = s++; f126 = s++; f127 = s++;
            f128 = s++; f129 = s++; f130 = s++; f131 = s++; f132 = s++; f133 = s++; f134 = s++; f135 = s++;
            f136 = s++; f137 = s++; f138 = s++; f139 = s++; f140 = s++; f141 = s++; f142 = s++; f143 = s++;
            f144 = s++; f145 = s++; f146 = s++; f147 = s++; f148 = s++; f149 = s++; f150 = s++; f151 = s++;
            f152 = s++; f153 = s++; f154 = s++; f155 = s++; f156 = s++; f157 = s++; f158 = s++; f159 = s++;
            f160 = s++; f161 = s++; f162 = s++; f163 = s++; f164 = s++; f165 = s++; f166 = s++; f167 = s++;
            f168 = s++; f169 = s++; f170 = s++; f171 = s++; f172 = s++; f173 = s++; f174 = s++; f175 = s++;
            f176 = s++; f177 = s++; f178 = s++; f179 = s++; f180 = s++; f181 = s++; f182 = s++; f183 = s++;
            f184 = s++; f185 = s++; f186 = s++; f187 = s++; f188 = s++; f189 = s++; f190 = s++; f191 = s++;
            f192 = s++; f193 = s++; f194 = s++; f195 = s++; f196 = s++; f197 = s++; f198 = s++; f199 = s++;
            f200 = s++; f201 = s++; f202 = s++; f203 = s++; f204 = s++; f205 = s++; f206 = s++; f207 = s++;
            f208 = s++; f209 = s++; f210 = s++; f211 = s++; f212 = s++; f213 = s++; f214 = s++; f215 = s++;
            f216 = s++; f217 = s++; f218 = s++; f219 = s++; f220 = s++; f221 = s++; f222 = s++; f223 = s++;
            f224 = s++; f225 = s++; f226 = s++; f227 = s++; f228 = s++; f229 = s++; f230 = s++; f231 = s++;
            f232 = s++; f233 = s++; f234 = s++; f235 = s++; f236 = s++; f237 = s++; f238 = s++; f239 = s++;
            f240 = s++; f241 = s++; f242 = s++; f243 = s++; f244 = s++; f245 = s++; f246 = s++; f247 = s++;
            f248 = s++; f249 = s++; f250 = s++; f251 = s++; f252 = s++; f253 = s++; f254 = s++; f255 = s++;
        }

        // The copy constructor: each field a load from the original and a store of it.
        Wide(Wide o) {
            f000 = o.f000; f001 = o.f001; f002 = o.f002; f003 = o.f003; f004 = o.f004; f005 = o.f005; f006 = o.f006;
            f007 = o.f007; f008 = o.f008; f009 = o.f009; f010 = o.f010; f011 = o.f011; f012 = o.f012; f013 = o.f013;
            f014 = o.f014; f015 = o.f015; f016 = o.f016; f017 = o.f017; f018 = o.f018; f019 = o.f019; f020 = o.f020;
            f021 = o.f021; f022 = o.f022; f023 = o.f023; f024 = o.f024; f025 = o.f025; f026 = o.f026; f027 = o.f027;
            f028 = o.f028; f029 = o.f029; f030 = o.f030; f031 = o.f031; f032 = o.f032; f033 = o.f033; f034 = o.f034;
            f035 = o.f035; f036 = o.f036; f037 = o.f037; f038 = o.f038; f039 = o.f039; f040 = o.f040; f041 = o.f041;
            f042 = o.f042; f043 = o.f043; f044 = o.f044; f045 = o.f045; f046 = o.f046; f047 = o.f047; f048 = o.f048;
            f049 = o.f049; f050 = o.f050; f051 = o.f051; f052 = o.f052; f053 = o.f053; f054 = o.f054; f055 = o.f055;
            f056 = o.f056; f057 = o.f057; f058 = o.f058; f059 = o.f059; f060 = o.f060; f061 = o.f061; f062 = o.f062;
            f063 = o.f063; f064 = o.f064; f065 = o.f065; f066 = o.f066; f067 = o.f067; f068 = o.f068; f069 = o.f069;
            f070 = o.f070; f071 = o.f071; f072 = o.f072; f073 = o.f073; f074 = o.f074; f075 = o.f075; f076 = o.f076;
            f077 = o.f077; f078 = o.f078; f079 = o.f079; f080 = o.f080; f081 = o.f081; f082 = o.f082; f083 = o.f083;
            f084 = o.f084; f085 = o.f085; f086 = o.f086; f087 = o.f087; f088 = o.f088; f089 = o.f089; f090 = o.f090;
            f091 = o.f091; f092 = o.f092; f093 = o.f093; f094 = o.f094; f095 = o.f095; f096 = o.f096; f097 = o.f097;
            f098 = o.f098; f099 = o.f099; f100 = o.f100; f101 = o.f101; f102 = o.f102; f103 = o.f103; f104 = o.f104;
            f105 = o.f105; f106 = o.f106; f107 = o.f107; f108 = o.f108; f109 = o.f109; f110 = o.f110; f111 = o.f111;
            f112 = o.f112; f113 = o.f113; f114 = o.f114; f115 = o.f115; f116 = o.f116; f117 = o.f117; f118 = o.f118;
            f119 = o.f119; f120 = o.f120; f121 = o.f121; f122 = o.f122; f123 = o.f123; f124 = o.f124; f125 = o.f125;
            f126 = o.f126; f127 = o.f127; f128 = o.f128; f129 = o.f129; f130 = o.f130; f131 = o.f131; f132 = o.f132;
            f133 = o.f133; f134 = o.f134; f135 = o.f135; f136 = o.f136; f137 = o.f137; f138 = o.f138; f139 = o.f139;
            f140 = o.f140; f141 = o.f141; f142 = o.f142; f143 = o.f143; f144 = o.f144; f145 = o.f145; f146 = o.f146;
            f147 = o.f147; f148 = o.f148; f149 = o.f149; f150 = o.f150; f151 = o.f151; f152 = o.f152; f153 = o.f153;
            f154 = o.f154; f155 = o.f155; f156 = o.f156; f157 = o.f157; f158 = o.f158; f159 = o.f159; f160 = o.f160;
            f161 = o.f161; f162 = o.f162; f163 = o.f163; f164 = o.f164; f165 = o.f165; f166 = o.f166; f167 = o.f167;
            f168 = o.f168; f169 = o.f169; f170 = o.f170; f171 = o.f171; f172 = o.f172; f173 = o.f173; f174 = o.f174;
            f175 = o.f175; f176 = o.f176; f177 = o.f177; f178 = o.f178; f179 = o.f179; f180 = o.f180; f181 = o.f181;
            f182 = o.f182; f183 = o.f183; f184 = o.f184; f185 = o.f185; f186 = o.f186; f187 = o.f187; f188 = o.f188;
            f189 = o.f189; f190 = o.f190; f191 = o.f191; f192 = o.f192; f193 = o.f193; f194 = o.f194; f195 = o.f195;
            f196 = o.f196; f197 = o.f197; f198 = o.f198; f199 = o.f199; f200 = o.f200; f201 = o.f201; f202 = o.f202;
            f203 = o.f203; f204 = o.f204; f205 = o.f205; f206 = o.f206; f207 = o.f207; f208 = o.f208; f209 = o.f209;
            f210 = o.f210; f211 = o.f211; f212 = o.f212; f213 = o.f213; f214 = o.f214; f215 = o.f215; f216 = o.f216;
            f217 = o.f217; f218 = o.f218; f219 = o.f219; f220 = o.f220; f221 = o.f221; f222 = o.f222; f223 = o.f223;
            f224 = o.f224; f225 = o.f225; f226 = o.f226; f227 = o.f227; f228 = o.f228; f229 = o.f229; f230 = o.f230;
            f231 = o.f231; f232 = o.f232; f233 = o.f233; f234 = o.f234; f235 = o.f235; f236 = o.f236; f237 = o.f237;
            f238 = o.f238; f239 = o.f239; f240 = o.f240; f241 = o.f241; f242 = o.f242; f243 = o.f243; f244 = o.f244;
            f245 = o.f245; f246 = o.f246; f247 = o.f247; f248 = o.f248; f249 = o.f249; f250 = o.f250; f251 = o.f251;
            f252 = o.f252; f253 = o.f253; f254 = o.f254; f255 = o.f255;
        }

        long mix() {
            long h = 17;
            h = h * 31 + (f000 ^ f001 ^ f002 ^ f003 ^ f004 ^ f005 ^ f006 ^ f007);
            h = h * 31 + (f008 ^ f009 ^ f010 ^ f011 ^ f012 ^ f013 ^ f014 ^ f015);
            h = h * 31 + (f016 ^ f017 ^ f018 ^ f019 ^ f020 ^ f021 ^ f022 ^ f023);
            h = h * 31 + (f024 ^ f025 ^ f026 ^ f027 ^ f028 ^ f029 ^ f030 ^ f031);
            h = h * 31 + (f032 ^ f033 ^ f034 ^ f035 ^ f036 ^ f037 ^ f038 ^ f039);
            h = h * 31 + (f040 ^ f041 ^ f042 ^ f043 ^ f044 ^ f045 ^ f046 ^ f047);
            h = h * 31 + (f048 ^ f049 ^ f050 ^ f051 ^ f052 ^ f053 ^ f054 ^ f055);
            h = h * 31 + (f056 ^ f057 ^ f058 ^ f059 ^ f060 ^ f061 ^ f062 ^ f063);
            h = h * 31 + (f064 ^ f065 ^ f066 ^ f067 ^ f068 ^ f069 ^ f070 ^ f071);
            h = h * 31 + (f072 ^ f073 ^ f074 ^ f075 ^ f076 ^ f077 ^ f078 ^ f079);
            h = h * 31 + (f080 ^ f081 ^ f082 ^ f083 ^ f084 ^ f085 ^ f086 ^ f087);
            h = h * 31 + (f088 ^ f089 ^ f090 ^ f091 ^ f092 ^ f093 ^ f094 ^ f095);
            h = h * 31 + (f096 ^ f097 ^ f098 ^ f099 ^ f100 ^ f101 ^ f102 ^ f103);
            h = h * 31 + (f104 ^ f105 ^ f106 ^ f107 ^ f108 ^ f109 ^ f110 ^ f111);
            h = h * 31 + (f112 ^ f113 ^ f114 ^ f115 ^ f116 ^ f117 ^ f118 ^ f119);
            h = h * 31 + (f120 ^ f121 ^ f122 ^ f123 ^ f124 ^ f125 ^ f126 ^ f127);
            h = h * 31 + (f128 ^ f129 ^ f130 ^ f131 ^ f132 ^ f133 ^ f134 ^ f135);
            h = h * 31 + (f136 ^ f137 ^ f138 ^ f139 ^ f140 ^ f141 ^ f142 ^ f143);
            h = h * 31 + (f144 ^ f145 ^ f146 ^ f147 ^ f148 ^ f149 ^ f150 ^ f151);
            h = h * 31 + (f152 ^ f153 ^ f154 ^ f155 ^ f156 ^ f157 ^ f158 ^ f159);
            h = h * 31 + (f160 ^ f161 ^ f162 ^ f163 ^ f164 ^ f165 ^ f166 ^ f167);
            h = h * 31 + (f168 ^ f169 ^ f170 ^ f171 ^ f172 ^ f173 ^ f174 ^ f175);
            h = h * 31 + (f176 ^ f177 ^ f178 ^ f179 ^ f180 ^ f181 ^ f182 ^ f183);
            h = h * 31 + (f184 ^ f185 ^ f186 ^ f187 ^ f188 ^ f189 ^ f190 ^ f191);
            h = h * 31 + (f192 ^ f193 ^ f194 ^ f195 ^ f196 ^ f197 ^ f198 ^ f199);
            h = h * 31 + (f200 ^ f201 ^ f202 ^ f203 ^ f204 ^ f205 ^ f206 ^ f207);
            h = h * 31 + (f208 ^ f209 ^ f210 ^ f211 ^ f212 ^ f213 ^ f214 ^ f215);
            h = h * 31 + (f216 ^ f217 ^ f218 ^ f219 ^ f220 ^ f221 ^ f222 ^ f223);
            h = h * 31 + (f224 ^ f225 ^ f226 ^ f227 ^ f228 ^ f229 ^ f230 ^ f231);
            h = h * 31 + (f232 ^ f233 ^ f234 ^ f235 ^ f236 ^ f237 ^ f238 ^ f239);
            h = h * 31 + (f240 ^ f241 ^ f242 ^ f243 ^ f244 ^ f245 ^ f246 ^ f247);
            h = h * 31 + (f248 ^ f249 ^ f250 ^ f251 ^ f252 ^ f253 ^ f254 ^ f255);
            return h;
        }
    }

    // ---- Allocation sites (one method each: the profile names a site by its frames) ---------------------------

    // Contents are written once, after the site's allocation (the allocating frame is the site's method).
    static long[] filled(long[] a, long seed) {
        for (int i = 0; i < a.length; i++) a[i] = seed * 1_000_003L + i;
        return a;
    }

    static long[] makeArraycopySource(long seed) { return filled(new long[LONGS], seed); }

    static long[] makeArraycopyTarget() { return new long[LONGS]; }

    static int[] makeCopyOfSource(long seed) {
        int[] a = new int[INTS];
        for (int i = 0; i < INTS; i++) a[i] = (int) (seed * 7919 + i);
        return a;
    }

    static ByteArrayOutputStream makeStreamBuffer(long seed) {
        ByteArrayOutputStream stream = new ByteArrayOutputStream(STREAM_BYTES); // its buffer: this site's object
        for (int i = 0; i < STREAM_BYTES; i++) stream.write((int) (seed + i));
        return stream;
    }

    static Wide makeWideOriginal(long seed) { return new Wide(seed); }

    static long[] makeRelaySource(long seed) { return filled(new long[LONGS], seed); }

    static long[] makeRelayTemp() { return new long[LONGS]; }

    static long[] makeRelayTarget() { return new long[LONGS]; }

    static long[] makeSummedArray(long seed) { return filled(new long[LONGS], seed); }

    static byte[] makeHashedBytes(long seed) {
        byte[] a = new byte[STREAM_BYTES];
        for (int i = 0; i < STREAM_BYTES; i++) a[i] = (byte) (seed + i);
        return a;
    }

    static long[] makeTransformSource(long seed) { return filled(new long[LONGS], seed); }

    static long[] makeTransformed() { return new long[LONGS]; }

    static Wide makeMixedRecord(long seed) { return new Wide(seed); }

    // ---- Planted copies -----------------------------------------------------------------------------------------

    static long[] copyByArraycopy(long[] from, long[] to) {
        System.arraycopy(from, 0, to, 0, LONGS);
        return to;
    }

    static int[] duplicateByCopyOf(int[] from) { return Arrays.copyOf(from, from.length); }

    static byte[] snapshotStream(ByteArrayOutputStream stream) { return stream.toByteArray(); }

    static Wide copyWide(Wide original) { return new Wide(original); }

    // Through a temporary object: source -> temp -> target, one element at a time.
    static long[] relay(long[] from, long[] to) {
        long[] temp = makeRelayTemp();
        for (int i = 0; i < LONGS; i++) temp[i] = from[i];
        for (int i = 0; i < LONGS; i++) to[i] = temp[i];
        return to;
    }

    // ---- Controls: every loaded value goes to a computation -----------------------------------------------------

    static long sum(long[] from) {
        long s = 0;
        for (int i = 0; i < LONGS; i++) s += from[i];
        return s;
    }

    static long hash(byte[] from) { return Arrays.hashCode(from); }

    static long[] transform(long[] from) {
        long[] to = makeTransformed();
        for (int i = 0; i < LONGS; i++) to[i] = from[i] * 3 + 1;
        return to;
    }

    // ---- The run ------------------------------------------------------------------------------------------------

    static final int ACTIVITIES = 9;
    // Slices a turn of each activity runs for. An activity that allocates a tracked object for each copy spends
    // most of its time in the agent's allocation callback (a few µs each against 1-4 µs of copying), so the copy
    // constructor (2 KiB a copy), the relay and the transform control get more slices; the others copy or read
    // pooled objects and need one.
    static final int[] SLICES = {1, 1, 1, 4, 3, 1, 1, 2, 1};

    public static void main(String[] args) {
        double seconds = 4;
        for (int i = 0; i + 1 < args.length; i += 2)
            if (args[i].equals("--seconds")) seconds = Double.parseDouble(args[i + 1]);
            else throw new IllegalArgumentException("unknown option " + args[i]);

        long[][] arraycopySources = new long[POOL][];
        long[][] arraycopyTargets = new long[POOL][];
        int[][] copyOfSources = new int[POOL][];
        ByteArrayOutputStream[] streams = new ByteArrayOutputStream[POOL];
        Wide[] originals = new Wide[POOL];
        long[][] relaySources = new long[POOL][];
        long[][] relayTargets = new long[POOL][];
        long[][] summed = new long[POOL][];
        byte[][] hashed = new byte[POOL][];
        long[][] transformSources = new long[POOL][];
        Wide[] mixed = new Wide[POOL];
        long seed = 1;
        for (int p = 0; p < POOL; p++, seed++) {
            arraycopySources[p] = makeArraycopySource(seed);
            arraycopyTargets[p] = makeArraycopyTarget();
            copyOfSources[p] = makeCopyOfSource(seed);
            streams[p] = makeStreamBuffer(seed);
            originals[p] = makeWideOriginal(seed);
            relaySources[p] = makeRelaySource(seed);
            relayTargets[p] = makeRelayTarget();
            summed[p] = makeSummedArray(seed);
            hashed[p] = makeHashedBytes(seed);
            transformSources[p] = makeTransformSource(seed);
            mixed[p] = makeMixedRecord(seed);
        }
        Object[] keep = new Object[KEEP];
        long checksum = 0;
        long operations = 0;
        final long start = System.nanoTime();
        final long end = start + (long) (seconds * 1e9);
        for (long turn = 0; System.nanoTime() < end; turn++, seed++) {
            final int activity = (int) (turn % ACTIVITIES);
            final int renewed = (int) ((turn / ACTIVITIES) % POOL);
            switch (activity) { // this activity's sources: one renewed a slice, so that young ones are moved
                case 0:
                    arraycopySources[renewed] = makeArraycopySource(seed);
                    arraycopyTargets[renewed] = makeArraycopyTarget();
                    break;
                case 1: copyOfSources[renewed] = makeCopyOfSource(seed); break;
                case 2: streams[renewed] = makeStreamBuffer(seed); break;
                case 3: originals[renewed] = makeWideOriginal(seed); break;
                case 4:
                    relaySources[renewed] = makeRelaySource(seed);
                    relayTargets[renewed] = makeRelayTarget();
                    break;
                case 5: summed[renewed] = makeSummedArray(seed); break;
                case 6: hashed[renewed] = makeHashedBytes(seed); break;
                case 7: transformSources[renewed] = makeTransformSource(seed); break;
                default: mixed[renewed] = makeMixedRecord(seed); break;
            }
            final long sliceEnd = System.nanoTime() + SLICE_NANOS * SLICES[activity];
            for (int p = 0; System.nanoTime() < sliceEnd; p = (p + 1) % POOL, operations++) {
                final int k = (int) (operations % KEEP);
                switch (activity) {
                    case 0: checksum += copyByArraycopy(arraycopySources[p], arraycopyTargets[p])[p]; break;
                    case 1: { int[] c = duplicateByCopyOf(copyOfSources[p]); keep[k] = c; checksum += c[p]; break; }
                    case 2: { byte[] c = snapshotStream(streams[p]); keep[k] = c; checksum += c[p]; break; }
                    case 3: { Wide c = copyWide(originals[p]); keep[k] = c; checksum += c.f001; break; }
                    case 4: checksum += relay(relaySources[p], relayTargets[p])[p]; break;
                    case 5: checksum += sum(summed[p]); break;
                    case 6: checksum += hash(hashed[p]); break;
                    case 7: { long[] c = transform(transformSources[p]); keep[k] = c; checksum += c[p]; break; }
                    default: checksum += mixed[p].mix(); break;
                }
            }
        }
        long collections = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans())
            collections += Math.max(0, gc.getCollectionCount());
        System.out.println("JavaCopies: " + operations + " operations, checksum " + Long.toHexString(checksum));
        System.err.printf("JavaCopies: %.1f s, %d collections%n", (System.nanoTime() - start) / 1e9, collections);
    }
}
