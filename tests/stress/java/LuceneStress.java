// Lucene 4.10 (Debian's liblucene4.10-java): indexes generated documents into a directory on disk, then two
// threads parse queries with the classic QueryParser and search. Prints one line per thread with its totals, in
// thread order after both have finished, so the output is the same on every run.
//
// usage: java -cp lucene-core:lucene-queryparser:lucene-analyzers-common:. LuceneStress INDEX_DIR DOCS QUERIES
import java.io.File;
import java.util.ArrayList;
import java.util.List;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.IntField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.Version;

public final class LuceneStress {
    // A fixed linear congruential generator: the same documents and queries on every run and JVM.
    static final class Lcg {
        long state;
        Lcg(long seed) { state = seed; }
        int next(int bound) {
            state = state * 6364136223846793005L + 1442695040888963407L;
            return (int) ((state >>> 33) % bound);
        }
        // Skewed towards small values, like word frequencies in text.
        int skewed(int bound) { return Math.min(next(bound), Math.min(next(bound), next(bound))); }
    }

    static String word(int n) { return "w" + Integer.toString(n, 36); }

    public static void main(String[] args) throws Exception {
        final File indexDir = new File(args[0]);
        final int docs = Integer.parseInt(args[1]);
        final int queries = Integer.parseInt(args[2]);
        final int vocabulary = 3000;
        final Analyzer analyzer = new StandardAnalyzer();

        // One segment, merged in order: document numbers, and so tie-broken rankings, are the same on every run.
        IndexWriterConfig config = new IndexWriterConfig(Version.LATEST, analyzer);
        config.setRAMBufferSizeMB(256).setMaxBufferedDocs(docs + 1);
        config.setMergeScheduler(new SerialMergeScheduler());
        config.setMergePolicy(new LogDocMergePolicy());
        Directory directory = FSDirectory.open(indexDir);
        try (IndexWriter writer = new IndexWriter(directory, config)) {
            Lcg random = new Lcg(42);
            StringBuilder body = new StringBuilder();
            for (int d = 0; d < docs; d++) {
                body.setLength(0);
                int length = 20 + random.next(80);
                for (int w = 0; w < length; w++) body.append(word(random.skewed(vocabulary))).append(' ');
                Document document = new Document();
                document.add(new StringField("id", "doc" + d, Field.Store.YES));
                document.add(new IntField("number", d, Field.Store.YES));
                document.add(new TextField("body", body.toString(), Field.Store.YES));
                writer.addDocument(document);
            }
            writer.forceMerge(1);
        }

        final DirectoryReader reader = DirectoryReader.open(directory);
        final IndexSearcher searcher = new IndexSearcher(reader);
        final String[] results = new String[2];
        final Throwable[] failures = new Throwable[2];
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            final int id = t;
            Thread thread = new Thread(() -> {
                try {
                    Lcg random = new Lcg(1000 + id);
                    long totalHits = 0, docSum = 0, storedChars = 0;
                    for (int q = 0; q < queries; q++) {
                        // A QueryParser per query: it is not thread-safe, and parsing is part of the workload.
                        QueryParser parser = new QueryParser(Version.LATEST, "body", analyzer);
                        String a = word(random.skewed(vocabulary)), b = word(random.skewed(vocabulary));
                        String c = word(random.skewed(vocabulary));
                        String text;
                        switch (q % 5) {
                            case 0: text = a + " AND " + b; break;
                            case 1: text = a + " OR " + b + " -" + c; break;
                            case 2: text = "\"" + a + " " + b + "\"~3"; break;
                            case 3: text = "(" + a + " OR " + b + ") AND " + c.substring(0, 2) + "*"; break;
                            default: text = a + "^2 " + b + " " + c; break;
                        }
                        Query query = parser.parse(text);
                        TopDocs top = searcher.search(query, 10);
                        totalHits += top.totalHits;
                        for (ScoreDoc hit : top.scoreDocs) {
                            docSum += hit.doc;
                            storedChars += searcher.doc(hit.doc).get("body").length();
                        }
                    }
                    results[id] = "thread " + id + ": queries " + queries + " hits " + totalHits + " docsum " + docSum
                            + " stored " + storedChars;
                } catch (Throwable e) {
                    failures[id] = e;
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) thread.join();
        for (int t = 0; t < 2; t++) {
            if (failures[t] != null) throw new RuntimeException("search thread " + t, failures[t]);
            System.out.println(results[t]);
        }
        System.out.println("documents " + reader.numDocs() + " segments " + reader.leaves().size());
        reader.close();
        directory.close();
    }
}
