// Xalan XSLT workload for the ojx JVM overhead benchmark (bench/jvm/overhead.py).
//
// A fixed amount of work with Xalan-Java 2.7 (Debian package libxalan2-java, its interpretive processor, not the
// JDK's built-in XSLTC) and Xerces (libxerces2-java): generate a catalog document from a seeded generator,
// compile the stylesheet once, then parse the document and transform it TRANSFORMS times, with a parameter that
// changes from one transformation to the next. Prints one line "checksum <hex>" over all the outputs.
//
// usage: java -cp <classes>:/usr/share/java/xalan2.jar:/usr/share/java/serializer.jar:/usr/share/java/xercesImpl.jar \
//          XalanWorkload STYLESHEET [ITEMS [TRANSFORMS]]
//   STYLESHEET: bench/jvm/workloads/report.xsl; ITEMS: catalog size (default 4000); TRANSFORMS: default 12

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

import javax.xml.transform.Templates;
import javax.xml.transform.Transformer;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.stream.StreamResult;
import javax.xml.transform.stream.StreamSource;

public final class XalanWorkload {
    private static final String[] CATEGORIES = {"tools", "books", "garden", "music", "toys", "food", "office",
            "sports", "kitchen", "health", "auto", "pets", "travel", "games"};
    private static final String[] REGIONS = {"north", "south", "east", "west", "central", "islands", "coast", "hills"};
    private static final String[] WORDS = {"sturdy", "compact", "classic", "deluxe", "portable", "quiet", "bright",
            "modular", "vintage", "rugged", "smart", "eco", "premium", "basic", "folding", "wireless", "heavy",
            "light", "family", "travel", "mini", "pro", "ultra", "soft"};
    private static final String[] NOUNS = {"lamp", "kettle", "drill", "novel", "guitar", "puzzle", "tent", "chair",
            "pan", "scale", "cable", "leash", "bag", "board", "clock", "brush", "jar", "kit", "rack", "mat"};

    private static long state = 7;

    private static int next(int bound) {
        state = state * 6364136223846793005L + 1442695040888963407L;
        return (int) Long.remainderUnsigned(state >>> 17, bound);
    }

    private static byte[] catalog(int items) {
        StringBuilder xml = new StringBuilder(items * 400);
        xml.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<catalog>\n");
        for (int id = 1; id <= items; id++) {
            String noun = NOUNS[next(NOUNS.length)];
            xml.append("  <item id=\"i").append(id).append("\" category=\"").append(CATEGORIES[next(CATEGORIES.length)])
                    .append("\" region=\"").append(REGIONS[next(REGIONS.length)])
                    .append("\" price=\"").append(next(100000) / 100).append('.').append(10 + next(90))
                    .append("\" qty=\"").append(next(500)).append("\">\n");
            xml.append("    <name>").append(WORDS[next(WORDS.length)]).append(' ').append(WORDS[next(WORDS.length)])
                    .append(' ').append(noun).append(' ').append(Integer.toString(id * 7919, 36)).append("</name>\n");
            xml.append("    <tags>");
            for (int t = next(4); t >= 0; t--) {
                xml.append("<tag>").append(WORDS[next(WORDS.length)]).append("</tag>");
            }
            xml.append("</tags>\n    <description>");
            for (int w = 8 + next(30); w > 0; w--) {
                xml.append(w % 5 == 0 ? "the " : "").append(WORDS[next(WORDS.length)]).append(' ')
                        .append(NOUNS[next(NOUNS.length)]).append(w == 1 ? "." : ", ");
            }
            xml.append("</description>\n  </item>\n");
        }
        xml.append("</catalog>\n");
        return xml.toString().getBytes(StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: XalanWorkload STYLESHEET [ITEMS [TRANSFORMS]]");
            System.exit(2);
        }
        int items = args.length > 1 ? Integer.parseInt(args[1]) : 4000;
        int transforms = args.length > 2 ? Integer.parseInt(args[2]) : 12;
        long start = System.nanoTime();
        byte[] document = catalog(items);
        TransformerFactory factory = new org.apache.xalan.processor.TransformerFactoryImpl();
        Templates templates = factory.newTemplates(new StreamSource(new File(args[0])));
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        ByteArrayOutputStream output = new ByteArrayOutputStream(1 << 20);
        long bytes = 0;
        for (int i = 0; i < transforms; i++) {
            Transformer transformer = templates.newTransformer();
            transformer.setParameter("min-price", Integer.toString((i * 37) % 900));
            transformer.setParameter("top", Integer.toString(10 + i % 10));
            output.reset();
            transformer.transform(new StreamSource(new ByteArrayInputStream(document)), new StreamResult(output));
            digest.update(output.toByteArray());
            bytes += output.size();
        }
        System.err.printf("xalan: %s, parser %s; %d-item catalog (%d bytes), %d transformations in %.2f s, "
                + "%d bytes out%n", factory.getClass().getName(),
                javax.xml.parsers.SAXParserFactory.newInstance().getClass().getName(), items, document.length,
                transforms, (System.nanoTime() - start) / 1e9, bytes);
        StringBuilder hex = new StringBuilder();
        for (byte b : digest.digest()) hex.append(String.format("%02x", b));
        System.out.println("checksum " + hex);
    }
}
