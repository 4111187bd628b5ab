"""The corpus's programs beyond bench/jvm/overhead.py's workloads and tests/stress's: how each is run and its input.

JVM programs (each a bench/jvm/overhead.py Workload, so it runs and is checksummed the way those are):
  derby   Apache Derby 10.14 (libderby-java), embedded in-memory: bench/jvm/workloads/DerbyWorkload.java
  ant     Apache Ant 1.10 (ant): bench/corpus/ant-build.xml over java.base's java/{lang,util,io} sources from
          openjdk-17-source's src.zip (copy through a token filter, zip, tar.gz, unzip)
  saxon   Saxon-HE 9.9 (libsaxonhe-java), its own command line: bench/jvm/workloads/report.xsl over a generated
          4 000-item catalog, with -repeat:12 (Saxon parses the source and transforms it 12 times)
  freemarker  FreeMarker 2.3 (libfreemarker-java): three templates over 20 000 generated records, 60 rounds
          (bench/jvm/workloads/FreeMarkerWorkload.java); its output buffers are humongous under G1
Native program (under the LD_PRELOAD agent):
  gs      Ghostscript 10 (ghostscript): renders a generated 60-page PostScript document (text and filled arcs)
          to PNG at 100 dpi

Every input is generated from a fixed seed or taken from a Debian package, so every run does the same work.
"""
import random
import shutil
import zipfile
from pathlib import Path

import overhead

HERE = Path(__file__).resolve().parent
JVM_PROGRAMS = ("derby", "ant", "saxon", "freemarker")
NATIVE_PROGRAMS = ("gs",)

DERBY_ARGS = ["50000", "3"]
ANT_PACKAGES = ("java/lang/", "java/util/", "java/io/")
SAXON_ITEMS, SAXON_REPEATS = 4000, 12
FREEMARKER_ARGS = ["20000", "60"]
GS_PAGES = 60

WORDS = ("red green blue small large quick slow bright dark heavy light smooth rough old new plain fine "
         "round square sharp").split()
NOUNS = "lamp chair table desk shelf clock mirror vase rug sofa bed stool".split()
CATEGORIES = "home office garden kitchen outdoor toys books music".split()
REGIONS = "north south east west central".split()


def extract_sources(jdk, cache):
    """java.base's sources under ANT_PACKAGES (their top level only) from src.zip, into CACHE/ant-src once."""
    src_zip = overhead.require_src_zip(jdk)
    root = cache / "ant-src"
    stamp_file = cache / "ant-src.stamp"
    info = Path(src_zip).stat()
    stamp = f"{src_zip} {info.st_size} {info.st_mtime_ns} {ANT_PACKAGES}"
    if root.is_dir() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return root
    shutil.rmtree(root, ignore_errors=True)
    with zipfile.ZipFile(src_zip) as archive:
        for name in sorted(archive.namelist()):
            relative = name[len("java.base/"):]
            if name.startswith("java.base/") and name.endswith(".java") and any(
                    relative.startswith(package) and "/" not in relative[len(package):] for package in ANT_PACKAGES):
                archive.extract(name, root)
    stamp_file.write_text(stamp)
    return root


def write_if_changed(path, text):
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path


def catalog(items):
    """The Saxon input: the shape of XalanWorkload's catalog (what report.xsl reads), from a seeded generator."""
    rng = random.Random(7)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<catalog>"]
    for item in range(1, items + 1):
        tags = "".join(f"<tag>{rng.choice(WORDS)}</tag>" for _ in range(rng.randrange(1, 5)))
        description = " ".join(f"{rng.choice(WORDS)} {rng.choice(NOUNS)}," for _ in range(rng.randrange(3, 12)))
        lines.append(f'  <item id="i{item}" category="{rng.choice(CATEGORIES)}" region="{rng.choice(REGIONS)}" '
                     f'price="{rng.randrange(100000) // 100}.{10 + rng.randrange(90)}" qty="{rng.randrange(500)}">'
                     f"<name>{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.choice(NOUNS)}</name><tags>{tags}</tags>"
                     f"<description>{description}</description></item>")
    lines.append("</catalog>")
    return "\n".join(lines) + "\n"


def postscript(pages):
    """The Ghostscript input: PAGES pages, each a title, 8 filled circles and 62 lines of 8-point Courier."""
    rng = random.Random(11)
    lines = ["%!PS-Adobe-3.0", f"%%Pages: {pages}", "%%EndComments"]
    for page in range(1, pages + 1):
        lines.append(f"%%Page: {page} {page}")
        lines.append(f"/Helvetica-Bold findfont 16 scalefont setfont 72 760 moveto (Page {page}) show")
        for _ in range(8):
            lines.append(f"{rng.random():.3f} {rng.random():.3f} {rng.random():.3f} setrgbcolor newpath "
                         f"{rng.randrange(50, 550)} {rng.randrange(100, 700)} {rng.randrange(10, 60)} 0 360 arc fill")
        lines.append("0 setgray /Courier findfont 8 scalefont setfont")
        for y in range(740, 60, -11):
            text = " ".join(rng.choice(WORDS + NOUNS) for _ in range(rng.randrange(6, 16)))
            lines.append(f"40 {y} moveto ({text}) show")
        lines.append("showpage")
    lines.append("%%EOF")
    return "\n".join(lines) + "\n"


def jvm_workloads(names, jdk, cache, out):
    """The overhead.Workload of each JVM program named."""
    workloads = {}
    if "derby" in names:
        jars = [overhead.jar("derby.jar", "libderby-java")]
        workloads["derby"] = overhead.Workload(
            "derby", "libderby-java", f"Derby: {DERBY_ARGS[0]} orders, {DERBY_ARGS[1]} query rounds",
            [overhead.build_driver(jdk, cache, "DerbyWorkload.java", jars)] + jars,
            # Derby's log to stderr, not to derby.log in the working directory
            ["-Dderby.stream.error.field=java.lang.System.err", "DerbyWorkload"] + DERBY_ARGS)
    if "ant" in names:
        launcher = overhead.jar("ant-launcher.jar", "ant", ["/usr/share/ant/lib"])
        source = extract_sources(jdk, cache)
        workloads["ant"] = overhead.Workload(
            "ant", "ant, openjdk-17-source", f"Ant: copy, zip, tar.gz and unzip {', '.join(ANT_PACKAGES)}",
            [launcher], ["-Dant.home=/usr/share/ant", "org.apache.tools.ant.launch.Launcher", "-emacs", "-quiet",
                         "-f", str(HERE / "ant-build.xml"), f"-Dsrc={source}", f"-Dout={out / 'ant-out'}"])
    if "saxon" in names:
        saxon = overhead.jar("Saxon-HE.jar", "libsaxonhe-java")
        source = write_if_changed(cache / f"saxon-catalog-{SAXON_ITEMS}.xml", catalog(SAXON_ITEMS))
        output = out / "saxon-out"
        workloads["saxon"] = overhead.Workload(
            "saxon", "libsaxonhe-java", f"Saxon-HE: report.xsl over a {SAXON_ITEMS}-item catalog, "
            f"-repeat:{SAXON_REPEATS}", [saxon],
            ["net.sf.saxon.Transform", f"-s:{source}", f"-xsl:{overhead.WORKLOAD_SOURCES / 'report.xsl'}",
             f"-o:{output / 'report.html'}", f"-repeat:{SAXON_REPEATS}"],
            checksum_from_output=False, output_dir=output)
    if "freemarker" in names:
        jars = [overhead.jar("freemarker.jar", "libfreemarker-java")]
        workloads["freemarker"] = overhead.Workload(
            "freemarker", "libfreemarker-java", f"FreeMarker: {FREEMARKER_ARGS[0]} records, {FREEMARKER_ARGS[1]} rounds",
            [overhead.build_driver(jdk, cache, "FreeMarkerWorkload.java", jars)] + jars,
            ["FreeMarkerWorkload"] + FREEMARKER_ARGS)
    return workloads


def native_argv(name, cache):
    """(argv, environment) of a native program; "{run}" in argv is the run's own directory."""
    if name == "gs":
        gs = shutil.which("gs")
        if not gs:
            raise overhead.SetupError("gs is not installed (Debian package ghostscript, bench/jvm/install.sh)")
        document = write_if_changed(cache / f"gs-{GS_PAGES}.ps", postscript(GS_PAGES))
        return [gs, "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=png16m", "-r100",
                "-sOutputFile={run}/page%03d.png", str(document)], {}
    raise ValueError(name)
