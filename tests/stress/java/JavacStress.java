// javac in a loop (the JDK's compiler through javax.tools, in this JVM): generates a source tree of classes with
// generics, lambdas, inner classes and string switches, and compiles it ROUNDS times into separate directories.
// Prints the number and SHA-256 of the class files of every round (javac's output has no timestamps), so the
// output is the same on every run.
//
// usage: java JavacStress WORK_DIR CLASSES ROUNDS
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

public final class JavacStress {
    static String source(int n, int classes) {
        String pkg = "gen.p" + (n % 6);
        StringBuilder s = new StringBuilder();
        s.append("package ").append(pkg).append(";\n");
        s.append("import java.util.*;\nimport java.util.function.*;\n");
        s.append("public class C").append(n).append("<T extends Comparable<T>> {\n");
        s.append("  private final List<T> items = new ArrayList<>();\n");
        s.append("  public void add(T t) { items.add(t); }\n");
        s.append("  public Optional<T> max() { return items.stream().max(Comparator.naturalOrder()); }\n");
        for (int m = 0; m < 12; m++) {
            s.append("  public static int f").append(m).append("(String key, int x) {\n");
            s.append("    Function<Integer, Integer> g = y -> y * ").append(m + 3).append(" + x;\n");
            s.append("    switch (key) {\n");
            for (int k = 0; k < 6; k++)
                s.append("      case \"k").append(k).append("\": return g.apply(").append(k * n + m).append(");\n");
            s.append("      default: return new Inner").append(m).append("().value(x);\n    }\n  }\n");
            s.append("  static final class Inner").append(m).append(" { int value(int x) { return x ^ ")
                    .append(n * 31 + m).append("; } }\n");
        }
        if (n > 0) {
            int other = (n * 7) % n;
            s.append("  public static int chain(int x) { return gen.p").append(other % 6).append(".C").append(other)
                    .append(".f1(\"k2\", x) + f").append(n % 12).append("(\"zz\", x); }\n");
        }
        s.append("  public static String text() { return \"");
        for (int i = 0; i < 40; i++) s.append("C").append(n).append("-").append(i).append(' ');
        s.append("\"; }\n}\n");
        return s.toString();
    }

    static String digest(Path dir) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        List<Path> files;
        try (Stream<Path> walk = Files.walk(dir)) {
            files = walk.filter(Files::isRegularFile).sorted().collect(Collectors.toList());
        }
        for (Path file : files) {
            sha.update(dir.relativize(file).toString().getBytes(StandardCharsets.UTF_8));
            sha.update(Files.readAllBytes(file));
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : sha.digest()) hex.append(String.format("%02x", b));
        return files.size() + " class files, sha256 " + hex;
    }

    public static void main(String[] args) throws Exception {
        final Path work = Paths.get(args[0]);
        final int classes = Integer.parseInt(args[1]);
        final int rounds = Integer.parseInt(args[2]);
        List<String> sources = new ArrayList<>();
        for (int n = 0; n < classes; n++) {
            Path file = work.resolve("src/gen/p" + (n % 6) + "/C" + n + ".java");
            Files.createDirectories(file.getParent());
            Files.write(file, source(n, classes).getBytes(StandardCharsets.UTF_8));
            sources.add(file.toString());
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        if (javac == null) throw new IOException("no system Java compiler (a JRE, not a JDK?)");
        for (int round = 0; round < rounds; round++) {
            Path out = work.resolve("classes" + round);
            Files.createDirectories(out);
            List<String> arguments = new ArrayList<>(List.of("-d", out.toString(), "-g", "-Xlint:none"));
            arguments.addAll(sources);
            int status = javac.run(null, null, null, arguments.toArray(new String[0]));
            if (status != 0) throw new IOException("javac failed in round " + round + ": " + status);
            System.out.println("round " + round + ": " + digest(out));
        }
    }
}
