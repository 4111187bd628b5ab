// FreeMarker workload for the ojx JVM benchmarks (bench/jvm/overhead.py) and the stress suite (tests/stress).
//
// FreeMarker 2.3 (Debian package libfreemarker-java) renders three templates over RECORDS generated records,
// ROUNDS times: an HTML report whose rows come from an imported macro library, a CSV with built-ins (upper_case,
// cap_first, number formats), and a summary of the records sorted by price. Each output is one growing text
// buffer of megabytes: at the JVM's default heap, G1 allocates its later arrays humongous (half a region or
// more), which is what a tracked object must never keep from being reclaimed. Prints one line
// "checksum <hex>" over all the outputs.
//
// usage: java -cp <classes>:/usr/share/java/freemarker.jar FreeMarkerWorkload [RECORDS [ROUNDS]]
//   RECORDS: default 20000; ROUNDS: default 60
import freemarker.cache.StringTemplateLoader;
import freemarker.template.Configuration;
import freemarker.template.Template;

import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public final class FreeMarkerWorkload {
    private static final String[] WORDS = {"sturdy", "compact", "classic", "deluxe", "portable", "quiet", "bright",
            "modular", "vintage", "rugged", "smart", "eco"};
    private static final String[] CATEGORIES = {"tools", "books", "garden", "music", "toys", "food"};

    private static long state = 7;

    private static int next(int bound) {
        state = state * 6364136223846793005L + 1442695040888963407L;
        return (int) Long.remainderUnsigned(state >>> 17, bound);
    }

    private static List<Map<String, Object>> records(int count) {
        List<Map<String, Object>> records = new ArrayList<>(count);
        for (int id = 0; id < count; id++) {
            Map<String, Object> record = new HashMap<>();
            record.put("id", id);
            record.put("name", WORDS[next(WORDS.length)] + " " + WORDS[next(WORDS.length)] + " "
                    + Integer.toString(id * 7919, 36));
            record.put("category", CATEGORIES[next(CATEGORIES.length)]);
            record.put("price", next(100000) / 100.0);
            record.put("qty", next(500));
            StringBuilder description = new StringBuilder();
            for (int w = 8 + next(12); w > 0; w--) {
                description.append(WORDS[next(WORDS.length)]).append(w % 3 == 0 ? " & " : " ");
            }
            record.put("description", description.toString());
            records.add(record);
        }
        return records;
    }

    public static void main(String[] args) throws Exception {
        int count = args.length > 0 ? Integer.parseInt(args[0]) : 20000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 60;
        Configuration configuration = new Configuration(Configuration.VERSION_2_3_31);
        StringTemplateLoader templates = new StringTemplateLoader();
        templates.putTemplate("lib.ftl", "<#macro row r><tr class=\"${r.category}\"><td>${r.id}</td>"
                + "<td>${r.name?html}</td><td>${r.price?string(\"0.00\")}</td><td>${r.qty}</td>"
                + "<td>${r.description?html}</td></tr></#macro>");
        templates.putTemplate("report.ftl", "<#import \"lib.ftl\" as l><html><body><h1>${title}</h1><table>"
                + "<#list records as r><@l.row r=r/></#list></table></body></html>");
        templates.putTemplate("csv.ftl", "id,name,category,price,qty\n<#list records as r>${r.id},"
                + "${r.name?upper_case},${r.category?cap_first},${r.price?c},${r.qty?string.computer}\n</#list>");
        templates.putTemplate("summary.ftl", "<#list records?sort_by(\"price\") as r><#if r?index < 500>"
                + "${r?index}: ${r.name} ${r.price}\n</#if></#list>");
        configuration.setTemplateLoader(templates);
        List<Map<String, Object>> records = records(count);
        long checksum = 0;
        for (int round = 0; round < rounds; round++) {
            for (String name : new String[] {"report.ftl", "csv.ftl", "summary.ftl"}) {
                Template template = configuration.getTemplate(name);
                Map<String, Object> model = new HashMap<>();
                model.put("title", "Round " + round);
                model.put("records", records);
                StringWriter out = new StringWriter();
                template.process(model, out);
                checksum = checksum * 31 + out.toString().hashCode();
            }
        }
        System.out.println("checksum " + Long.toHexString(checksum));
    }
}
