// Lucene indexing and searching workload for the ojx JVM overhead benchmark (bench/jvm/overhead.py).
//
// A fixed amount of work with Lucene 8 (Debian package liblucene8-java): index the Java sources of the JDK
// (openjdk-17-source's lib/src.zip, read straight from the zip) into an in-memory directory with the English
// analyzer (analyzers-common), then run a fixed, seeded mix of term, boolean, prefix, fuzzy, phrase (classic
// query parser) and range-filtered, sorted searches. Prints one line "checksum <hex>" over the hit counts, the top
// hits' documents and scores. Single-threaded, with a serial merge scheduler, so segments and document numbers
// are the same in every run.
//
// usage: java -cp <classes>:lucene-core.jar:lucene-analyzers-common.jar:lucene-queryparser.jar:lucene-queries.jar \
//          LuceneWorkload SRC_ZIP [FILES [QUERIES]]
//   SRC_ZIP: the JDK's src.zip; FILES: how many java.base sources to index, in name order (default 800);
//   QUERIES: searches to run (default 4000)

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.IntPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.MultiTerms;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.FuzzyQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.PrefixQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.util.BytesRef;

public final class LuceneWorkload {
    private static final String[] PHRASES = {
        "\"return null\"", "\"throw new IllegalArgumentException\"", "\"public static final\"",
        "\"@param key\" AND map", "synchron* AND lock", "\"security manager\" -applet", "hash~2 AND table",
        "\"unsigned int\" OR \"unsigned long\"", "+iterator +remove -deprecated", "\"this method is not\"",
    };

    private final MessageDigest digest;
    private long hits;

    private LuceneWorkload() throws Exception {
        digest = MessageDigest.getInstance("SHA-256");
    }

    private void absorb(long value) {
        for (int i = 0; i < 8; i++) {
            digest.update((byte) (value >>> (8 * i)));
        }
    }

    private static List<String[]> readSources(String zipPath, int limit) throws Exception {
        List<String[]> sources = new ArrayList<>();
        try (ZipFile zip = new ZipFile(zipPath)) {
            List<String> names = new ArrayList<>();
            for (Enumeration<? extends ZipEntry> entries = zip.entries(); entries.hasMoreElements(); ) {
                String name = entries.nextElement().getName();
                if (name.startsWith("java.base/") && name.endsWith(".java")) {
                    names.add(name);
                }
            }
            Collections.sort(names);
            ByteArrayOutputStream buffer = new ByteArrayOutputStream();
            byte[] chunk = new byte[1 << 16];
            for (String name : names.subList(0, Math.min(limit, names.size()))) {
                buffer.reset();
                try (InputStream in = zip.getInputStream(zip.getEntry(name))) {
                    for (int n; (n = in.read(chunk)) > 0; ) {
                        buffer.write(chunk, 0, n);
                    }
                }
                sources.add(new String[] {name.substring("java.base/".length()),
                        new String(buffer.toByteArray(), StandardCharsets.UTF_8)});
            }
        }
        return sources;
    }

    private void index(ByteBuffersDirectory directory, Analyzer analyzer, List<String[]> sources) throws Exception {
        IndexWriterConfig config = new IndexWriterConfig(analyzer)
                .setMergeScheduler(new SerialMergeScheduler())
                .setRAMBufferSizeMB(16);
        try (IndexWriter writer = new IndexWriter(directory, config)) {
            for (String[] source : sources) {
                String path = source[0];
                String body = source[1];
                int lines = 1;
                for (int i = 0; i < body.length(); i++) {
                    if (body.charAt(i) == '\n') lines++;
                }
                Document document = new Document();
                document.add(new StringField("path", path, Field.Store.YES));
                int slash = path.lastIndexOf('/');
                document.add(new StringField("package", slash < 0 ? "" : path.substring(0, slash), Field.Store.NO));
                document.add(new TextField("body", body, Field.Store.NO));
                document.add(new IntPoint("lines", lines));
                document.add(new NumericDocValuesField("lines", lines));
                document.add(new StoredField("lines", lines));
                writer.addDocument(document);
            }
            writer.commit();
        }
    }

    /** Every 3rd term of the body field with a document frequency in [4, 400]: selective, varied queries. */
    private static List<String> queryTerms(DirectoryReader reader) throws Exception {
        List<String> terms = new ArrayList<>();
        Terms body = MultiTerms.getTerms(reader, "body");
        TermsEnum iterator = body.iterator();
        int seen = 0;
        for (BytesRef term; (term = iterator.next()) != null; ) {
            int frequency = iterator.docFreq();
            if (frequency >= 4 && frequency <= 400 && term.length >= 3 && seen++ % 3 == 0) {
                terms.add(term.utf8ToString());
            }
        }
        return terms;
    }

    private void collect(IndexSearcher searcher, TopDocs top, boolean paths) throws Exception {
        hits += top.totalHits.value;
        absorb(top.totalHits.value);
        for (ScoreDoc hit : top.scoreDocs) {
            absorb(hit.doc);
            absorb(Float.floatToIntBits(hit.score));
        }
        if (paths && top.scoreDocs.length > 0) {
            Document document = searcher.doc(top.scoreDocs[0].doc);
            digest.update(document.get("path").getBytes(StandardCharsets.UTF_8));
            absorb(document.getField("lines").numericValue().longValue());
        }
    }

    private void search(DirectoryReader reader, Analyzer analyzer, int queries) throws Exception {
        IndexSearcher searcher = new IndexSearcher(reader);
        List<String> terms = queryTerms(reader);
        int n = terms.size();
        absorb(n);
        Sort byLines = new Sort(new SortField("lines", SortField.Type.INT, true));
        QueryParser parser = new QueryParser("body", analyzer);
        for (int i = 0; i < queries; i++) {
            String a = terms.get((int) ((i * 7919L) % n));
            String b = terms.get((int) ((i * 104729L + 13) % n));
            String c = terms.get((int) ((i * 1299709L + 101) % n));
            Query query;
            switch (i % 8) {
                case 0:
                case 1:
                    query = new TermQuery(new Term("body", a));
                    break;
                case 2:
                    query = new BooleanQuery.Builder()
                            .add(new TermQuery(new Term("body", a)), BooleanClause.Occur.SHOULD)
                            .add(new TermQuery(new Term("body", b)), BooleanClause.Occur.SHOULD)
                            .add(new TermQuery(new Term("body", c)), BooleanClause.Occur.SHOULD).build();
                    break;
                case 3:
                    query = new BooleanQuery.Builder()
                            .add(new TermQuery(new Term("body", "public")), BooleanClause.Occur.MUST)
                            .add(new TermQuery(new Term("body", a)), BooleanClause.Occur.MUST)
                            .add(new TermQuery(new Term("body", b)), BooleanClause.Occur.SHOULD).build();
                    break;
                case 4:
                    query = new PrefixQuery(new Term("body", a.substring(0, 3)));
                    break;
                case 5:
                    query = new FuzzyQuery(new Term("body", a), 1);
                    break;
                case 6: {
                    Query filtered = new BooleanQuery.Builder()
                            .add(new TermQuery(new Term("body", a)), BooleanClause.Occur.SHOULD)
                            .add(new TermQuery(new Term("body", b)), BooleanClause.Occur.SHOULD)
                            .add(IntPoint.newRangeQuery("lines", 100 + i % 200, 2000), BooleanClause.Occur.FILTER)
                            .build();
                    collect(searcher, searcher.search(filtered, 10, byLines), false);
                    continue;
                }
                default:
                    query = parser.parse(PHRASES[(i / 8) % PHRASES.length]);
                    break;
            }
            collect(searcher, searcher.search(query, 10), i % 16 == 0);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: LuceneWorkload SRC_ZIP [FILES [QUERIES]]");
            System.exit(2);
        }
        int files = args.length > 1 ? Integer.parseInt(args[1]) : 800;
        int queries = args.length > 2 ? Integer.parseInt(args[2]) : 4000;
        long start = System.nanoTime();
        List<String[]> sources = readSources(args[0], files);
        LuceneWorkload workload = new LuceneWorkload();
        Analyzer analyzer = new EnglishAnalyzer();
        try (ByteBuffersDirectory directory = new ByteBuffersDirectory()) {
            workload.index(directory, analyzer, sources);
            long indexed = System.nanoTime();
            try (DirectoryReader reader = DirectoryReader.open(directory)) {
                workload.absorb(reader.numDocs());
                workload.absorb(reader.leaves().size());
                workload.search(reader, analyzer, queries);
                System.err.printf("lucene: %d files indexed in %.2f s (%d segments), %d searches in %.2f s, "
                        + "%d hits%n", sources.size(), (indexed - start) / 1e9, reader.leaves().size(), queries,
                        (System.nanoTime() - indexed) / 1e9, workload.hits);
            }
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : workload.digest.digest()) hex.append(String.format("%02x", b));
        System.out.println("checksum " + hex);
    }
}
