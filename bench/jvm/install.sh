#!/bin/sh
# shellcheck disable=SC2086  # $packages and $missing are word lists
# Installs the Debian 12 packages the JVM overhead workloads (bench/jvm/overhead.py) and the real-program corpus
# (bench/corpus/corpus.py) need, if missing.
# Idempotent: packages already installed are left alone, and nothing is downloaded when all are present.
#
#   openjdk-17-jdk-headless  java, javac and the jdk.compiler module (the javac workload runs it)
#   openjdk-17-source        lib/src.zip: what the javac workload compiles and the Lucene workload indexes
#   libh2-java               H2 database engine (/usr/share/java/h2.jar)
#   liblucene8-java          Lucene 8 (/usr/share/java/lucene-{core,analyzers-common,queryparser,queries}-8.*.jar)
#   libxalan2-java           Xalan-Java XSLT processor (/usr/share/java/xalan2.jar, serializer.jar)
#   libxerces2-java          Xerces XML parser (/usr/share/java/xercesImpl.jar), the parser the xalan workload uses
# and for the corpus only (bench/corpus/programs.py; its python3 and sqlite3 come from scripts/install-deps.sh):
#   libderby-java            Apache Derby (/usr/share/java/derby.jar)
#   ant                      Apache Ant (/usr/share/ant/lib/ant-launcher.jar and its tasks)
#   libsaxonhe-java          Saxon-HE XSLT processor (/usr/share/java/Saxon-HE.jar)
#   libfreemarker-java       FreeMarker template engine (/usr/share/java/freemarker.jar; the heap workloads too)
#   lua5.4                   Lua 5.4, an allocation-heavy interpreter the native agent profiles
#   ghostscript              gs, the PostScript interpreter the native agent profiles
#
# Note: openjdk-17-source depends on openjdk-17-jdk of the same version, so installing it upgrades an older
# openjdk-17 to the version in the archive (a patch release of the same JDK 17).
set -eu

packages="openjdk-17-jdk-headless openjdk-17-source libh2-java liblucene8-java libxalan2-java libxerces2-java
          libderby-java ant libsaxonhe-java libfreemarker-java lua5.4 ghostscript"

missing=""
for package in $packages; do
    if ! dpkg-query -W -f='${Status}\n' "$package" 2>/dev/null | grep -q '^install ok installed$'; then
        missing="$missing $package"
    fi
done

if [ -z "$missing" ]; then
    echo "bench/jvm/install.sh: all packages present:"
    dpkg-query -W -f='  ${Package} ${Version}\n' $packages
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
echo "bench/jvm/install.sh: installing$missing"
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
dpkg-query -W -f='  ${Package} ${Version}\n' $packages
