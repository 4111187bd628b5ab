// The driver of the bytecode_verify_* tests: loads and initialises every class of a corpus, so that the JVM links
// (and with -Xverify:all verifies) each, and prints one line per class that fails with an error the rewriting could
// cause: "FAIL VerifyError|ClassFormatError|LinkageError|Other <class>: <message>". Initialisers that throw
// (ExceptionInInitializerError) and missing optional dependencies (NoClassDefFoundError) are counted, not printed:
// they are the classes' own business. verify_classes.sh runs it with and without the agent and compares.
//
//   java VerifyDriver jrt          every class of the runtime image's modules (run with --add-modules ALL-SYSTEM)
//   java VerifyDriver JAR...       every class of each jar, through a URLClassLoader per jar
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

public final class VerifyDriver {
    private int classes, loaded, verifyErrors, formatErrors, linkageErrors, others, initializers, missing, notFound;
    // Kept apart from System.out: a class's initialiser may replace or write to System.out.
    private final PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true);

    public static void main(String[] args) throws Exception {
        VerifyDriver driver = new VerifyDriver();
        if (args.length == 1 && args[0].equals("jrt")) {
            driver.runtimeImage();
        } else {
            for (String jar : args) {
                driver.jar(jar);
            }
        }
        driver.out.printf("driver: %d classes, %d loaded, %d VerifyError, %d ClassFormatError, %d other LinkageError,"
                + " %d other, ignored: %d ExceptionInInitializerError, %d NoClassDefFoundError, %d not found%n",
            driver.classes, driver.loaded, driver.verifyErrors, driver.formatErrors, driver.linkageErrors,
            driver.others, driver.initializers, driver.missing, driver.notFound);
        driver.out.flush();
        // Not System.exit: shutdown hooks registered by initialised classes could wait for anything.
        Runtime.getRuntime().halt(0);
    }

    private void runtimeImage() throws IOException {
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        List<String> names = new ArrayList<>();
        try (Stream<Path> modules = Files.list(jrt.getPath("/modules"))) {
            for (Path module : (Iterable<Path>) modules::iterator) {
                try (Stream<Path> files = Files.walk(module)) {
                    files.filter(p -> p.toString().endsWith(".class"))
                        .map(p -> module.relativize(p).toString())
                        .filter(n -> !n.equals("module-info.class"))
                        .forEach(n -> names.add(n.substring(0, n.length() - 6).replace('/', '.')));
                }
            }
        }
        names.sort(null);
        ClassLoader loader = ClassLoader.getSystemClassLoader();
        for (String name : names) {
            load(name, loader);
        }
    }

    private void jar(String path) throws IOException {
        List<String> names = new ArrayList<>();
        try (ZipFile zip = new ZipFile(path)) {
            for (Enumeration<? extends ZipEntry> e = zip.entries(); e.hasMoreElements();) {
                String n = e.nextElement().getName();
                if (n.endsWith(".class") && !n.startsWith("META-INF/") && !n.endsWith("module-info.class")) {
                    names.add(n.substring(0, n.length() - 6).replace('/', '.'));
                }
            }
        }
        names.sort(null);
        URLClassLoader loader = new URLClassLoader(new URL[] {Path.of(path).toUri().toURL()},
            ClassLoader.getPlatformClassLoader());
        for (String name : names) {
            load(name, loader);
        }
    }

    private void load(String name, ClassLoader loader) {
        ++classes;
        try {
            Class.forName(name, true, loader);
            ++loaded;
        } catch (ExceptionInInitializerError e) {
            ++initializers;
        } catch (NoClassDefFoundError e) {
            ++missing;
        } catch (ClassNotFoundException e) {
            ++notFound;
        } catch (VerifyError e) {
            ++verifyErrors;
            fail("VerifyError", name, e);
        } catch (ClassFormatError e) {
            ++formatErrors;
            fail("ClassFormatError", name, e);
        } catch (LinkageError e) {
            ++linkageErrors;
            fail("LinkageError", name, e);
        } catch (Throwable e) {
            ++others;
            fail("Other", name, e);
        }
    }

    private void fail(String kind, String name, Throwable e) {
        String message = String.valueOf(e.getMessage()).replace('\n', ' ');
        if (message.length() > 400) {
            message = message.substring(0, 400) + "...";
        }
        out.println("FAIL " + kind + " " + name + ": " + e.getClass().getName() + ": " + message);
    }
}
