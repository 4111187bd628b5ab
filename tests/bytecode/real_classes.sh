#!/bin/sh
# Round trip of real class files (bytecode_roundtrip_* tests): extracts one corpus into the build directory, then
# runs bytecode_roundtrip over all of it (every class read, written back byte for byte, every method decoded) and
# over a sample in --mutate mode (corrupted copies rejected or round-tripped). Exit 77 (ctest's skip) with the
# reason when the corpus is not installed.
#
#   real_classes.sh TOOL WORK_DIR jdk17|temurin25|debian_jars [PART]
#
# PART, a directory of the extraction (a module: java.base), runs the tool over that part only.
# The corpora: every module of Debian's OpenJDK 17 and of Temurin 25 (their lib/modules image, extracted with the
# JDK's own jimage, or their jmods with jmod where there is no image), and the jars in /usr/share/java. An
# extraction is kept in WORK_DIR with a stamp naming its sources, and reused while they are unchanged.
# OJX_JDK17_HOME and OJX_TEMURIN25_HOME point elsewhere; OJX_MUTATION_SEEDS and OJX_MUTATION_SAMPLE size the
# mutation run (defaults 200 seeds on each of 500 files).
set -eu
tool=$1
work=$2
corpus=$3
part=${4:-}
seeds=${OJX_MUTATION_SEEDS:-200}
sample=${OJX_MUTATION_SAMPLE:-500}

skip() {
    echo "SKIPPED: $*"
    exit 77
}

dir=$work/$corpus
mkdir -p "$work"

# Prints a description of the files named as arguments (sizes and times), the extraction's stamp.
describe_sources() {
    ls -lL --time-style=+%s "$@" 2>/dev/null
}

# Reuses $dir when its stamp matches $1, else runs the extraction command that follows into $dir.new.
extract() {
    stamp=$1
    shift
    if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then
        echo "reusing the extraction in $dir"
        return
    fi
    rm -rf "$dir" "$dir.new"
    mkdir -p "$dir.new"
    "$@"
    # Only class files are read; the images' other resources would double the disk used.
    find "$dir.new" -type f ! -name '*.class' -delete
    printf '%s' "$stamp" >"$dir.new/.stamp"
    mv "$dir.new" "$dir"
}

extract_jimage() {
    "$1/bin/jimage" extract --dir "$dir.new" "$1/lib/modules"
}

extract_jmods() {
    for jmod in "$1"/jmods/*.jmod; do
        name=$(basename "$jmod" .jmod)
        "$1/bin/jmod" extract --dir "$dir.new/$name" "$jmod"
    done
}

extract_jars() {
    for jar in $jars; do
        name=$(basename "$jar" .jar)
        mkdir -p "$dir.new/$name"
        # 11: the jar holds no class file (some Debian jars only point to others in their manifest).
        status=0
        unzip -qq -o "$jar" '*.class' -d "$dir.new/$name" || status=$?
        if [ "$status" -ne 0 ] && [ "$status" -ne 11 ]; then
            echo "unzip $jar failed with status $status"
            exit 1
        fi
    done
}

extract_jdk() {
    home=$1
    what=$2
    if [ ! -d "$home" ]; then
        skip "$what is not installed at $home"
    fi
    if [ -f "$home/lib/modules" ] && [ -x "$home/bin/jimage" ]; then
        extract "$(describe_sources "$home/lib/modules")" extract_jimage "$home"
    elif ls "$home"/jmods/*.jmod >/dev/null 2>&1 && [ -x "$home/bin/jmod" ]; then
        extract "$(describe_sources "$home"/jmods/*.jmod)" extract_jmods "$home"
    else
        skip "$what at $home has neither lib/modules with bin/jimage nor jmods with bin/jmod"
    fi
}

case $corpus in
jdk17)
    extract_jdk "${OJX_JDK17_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}" "Debian's OpenJDK 17"
    ;;
temurin25)
    extract_jdk "${OJX_TEMURIN25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}" "Temurin 25"
    ;;
debian_jars)
    command -v unzip >/dev/null || skip "unzip is not installed"
    # Each jar once: /usr/share/java holds versioned files and unversioned links to them.
    jars=$(for jar in /usr/share/java/*.jar; do [ -e "$jar" ] && readlink -f "$jar"; done | sort -u)
    [ -n "$jars" ] || skip "no jars in /usr/share/java"
    # shellcheck disable=SC2086
    extract "$(describe_sources $jars)" extract_jars
    ;;
*)
    echo "unknown corpus $corpus (jdk17, temurin25 or debian_jars)"
    exit 2
    ;;
esac

status=0
if [ -n "$part" ]; then
    [ -d "$dir/$part" ] || { echo "$corpus has no $part"; exit 2; }
    dir=$dir/$part
    corpus="$corpus/$part"
fi
"$tool" --label "$corpus" "$dir" || status=1
"$tool" --label "$corpus" --mutate "$seeds" --sample "$sample" "$dir" || status=1
exit $status
