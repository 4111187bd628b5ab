// Xalan-J (Debian's libxalan2-java, its interpreting processor, not the JDK's built-in XSLTC): transforms a
// generated XML document with a stylesheet that groups with keys, sorts and formats numbers, several times. Writes
// the last result to OUTPUT and prints the size and SHA-256 of every result, so the output is the same on every run.
//
// usage: java -cp xalan2.jar:serializer.jar:. XalanStress OUTPUT RECORDS ROUNDS
import java.io.ByteArrayOutputStream;
import java.io.FileOutputStream;
import java.io.StringReader;
import java.security.MessageDigest;

import javax.xml.transform.Templates;
import javax.xml.transform.Transformer;
import javax.xml.transform.stream.StreamResult;
import javax.xml.transform.stream.StreamSource;

public final class XalanStress {
    static final String STYLESHEET = String.join("\n",
            "<xsl:stylesheet version='1.0' xmlns:xsl='http://www.w3.org/1999/XSL/Transform'>",
            "  <xsl:output method='html' indent='yes'/>",
            "  <xsl:key name='by-city' match='person' use='@city'/>",
            "  <xsl:template match='/people'>",
            "    <html><body>",
            "      <xsl:for-each select='person[generate-id() = generate-id(key(\"by-city\", @city)[1])]'>",
            "        <xsl:sort select='@city'/>",
            "        <h2><xsl:value-of select='@city'/> (<xsl:value-of select='count(key(\"by-city\", @city))'/>)</h2>",
            "        <p>total <xsl:value-of select='format-number(sum(key(\"by-city\", @city)/@salary), \"#,##0.00\")'/></p>",
            "        <table>",
            "          <xsl:for-each select='key(\"by-city\", @city)'>",
            "            <xsl:sort select='@salary' data-type='number' order='descending'/>",
            "            <xsl:sort select='name'/>",
            "            <xsl:if test='position() &lt;= 25'>",
            "              <tr><td><xsl:value-of select='translate(name, \"abcdefghij\", \"ABCDEFGHIJ\")'/></td>",
            "                <td><xsl:value-of select='concat(substring(bio, 1, 40), \"...\")'/></td>",
            "                <td><xsl:value-of select='string-length(bio)'/></td></tr>",
            "            </xsl:if>",
            "          </xsl:for-each>",
            "        </table>",
            "      </xsl:for-each>",
            "    </body></html>",
            "  </xsl:template>",
            "</xsl:stylesheet>");

    static String document(int records) {
        StringBuilder xml = new StringBuilder("<?xml version='1.0'?>\n<people>\n");
        long state = 7;
        for (int i = 0; i < records; i++) {
            state = state * 6364136223846793005L + 1442695040888963407L;
            int r = (int) (state >>> 33);
            xml.append("<person city='city").append(r % 37).append("' salary='").append(1000 + r % 90000)
                    .append("'><name>person").append(Integer.toString(i * 7919 % 1000003, 26)).append("</name><bio>");
            for (int w = 0; w < 10 + r % 40; w++) xml.append("word").append((r >>> (w % 16)) % 97).append(' ');
            xml.append("</bio></person>\n");
        }
        return xml.append("</people>\n").toString();
    }

    public static void main(String[] args) throws Exception {
        final String output = args[0];
        final int records = Integer.parseInt(args[1]);
        final int rounds = Integer.parseInt(args[2]);
        final String xml = document(records);
        org.apache.xalan.processor.TransformerFactoryImpl factory = new org.apache.xalan.processor.TransformerFactoryImpl();
        Templates templates = factory.newTemplates(new StreamSource(new StringReader(STYLESHEET)));
        byte[] last = null;
        for (int round = 0; round < rounds; round++) {
            Transformer transformer = templates.newTransformer();
            ByteArrayOutputStream result = new ByteArrayOutputStream();
            transformer.transform(new StreamSource(new StringReader(xml)), new StreamResult(result));
            last = result.toByteArray();
            StringBuilder hex = new StringBuilder();
            for (byte b : MessageDigest.getInstance("SHA-256").digest(last)) hex.append(String.format("%02x", b));
            System.out.println("round " + round + ": " + last.length + " bytes, sha256 " + hex);
        }
        try (FileOutputStream file = new FileOutputStream(output)) {
            file.write(last);
        }
    }
}
