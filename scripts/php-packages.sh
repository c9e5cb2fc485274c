#!/usr/bin/env bash
# The two Composer packages of this repository as zips, for a Composer artifact repository (docs/PHP-PACKAGES.md):
#
#   scripts/php-packages.sh OUTDIR
#
# writes OUTDIR/deadbolt-symfony-bridge-<version>.zip (php/) and OUTDIR/deadbolt-stubs-<version>.zip (stubs/),
# <version> being Cargo.toml's: the packages are released with the extension, at its version. An artifact
# repository reads the version from the composer.json inside the zip (there is no VCS to guess it from), so the
# copy in the zip gets "version" stamped in; the checked-in files have none, which lets a path repository take
# the checkout's own (git's) version. Made with PHP's zip extension (php-zip: Composer needs it to read an
# artifact repository anyway), entries sorted and dated by the HEAD commit (SOURCE_DATE_EPOCH when set), so the
# same tree gives the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: php-packages.sh OUTDIR}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
[ -n "$version" ] || { echo "php-packages: no version in Cargo.toml" >&2; exit 1; }
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 315532800)}
php=$(bash scripts/php-binary.sh)
mkdir -p "$out"

# pack NAME DIR: DIR's files (and the repository's LICENSE) into OUTDIR/NAME-<version>.zip.
pack() {
  "$php" -d display_errors=stderr -r '
    [, $zipPath, $dir, $version, $epoch] = $argv;
    if (!class_exists(ZipArchive::class)) {
        fwrite(STDERR, "php-packages: PHP has no zip extension (Debian: apt-get install php-zip)\n");
        exit(1);
    }
    $json = json_decode(file_get_contents("$dir/composer.json"), true, 512, JSON_THROW_ON_ERROR);
    // "version" right after "name", where Composer itself puts it.
    $stamped = [];
    foreach ($json as $key => $value) {
        $stamped[$key] = $value;
        if ("name" === $key) {
            $stamped["version"] = $version;
        }
    }
    $files = ["composer.json" => json_encode($stamped, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE)."\n"];
    $it = new RecursiveIteratorIterator(new RecursiveDirectoryIterator($dir, FilesystemIterator::SKIP_DOTS));
    foreach ($it as $file) {
        $name = substr($file->getPathname(), strlen($dir) + 1);
        if ("composer.json" !== $name) {
            $files[$name] = file_get_contents($file->getPathname());
        }
    }
    $files["LICENSE"] ??= file_get_contents("LICENSE");
    ksort($files, SORT_STRING);
    @unlink($zipPath);
    $zip = new ZipArchive();
    if (true !== $zip->open($zipPath, ZipArchive::CREATE | ZipArchive::EXCL)) {
        fwrite(STDERR, "php-packages: cannot create $zipPath\n");
        exit(1);
    }
    foreach ($files as $name => $content) {
        $zip->addFromString($name, $content);
        $zip->setMtimeName($name, (int) $epoch);
        $zip->setExternalAttributesName($name, ZipArchive::OPSYS_UNIX, 0100644 << 16);
    }
    if (!$zip->close()) {
        fwrite(STDERR, "php-packages: writing $zipPath failed\n");
        exit(1);
    }
  ' "$out/$1-$version.zip" "$2" "$version" "$epoch"
  echo "$out/$1-$version.zip"
}

# The bridge is written against this extension's API: its ext-deadbolt range must be the release's own minor
# (^0.N while 0.x, ^N after), or a version bump left it behind.
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}
want="^$major"; [ "$major" != 0 ] || want="^0.$minor"
have=$("$php" -r 'echo json_decode(file_get_contents("php/composer.json"), true)["require"]["ext-deadbolt"] ?? "";')
if [ "$have" != "$want" ]; then
  echo "php-packages: php/composer.json requires ext-deadbolt \"$have\"; version $version wants \"$want\"" >&2
  exit 1
fi

pack deadbolt-symfony-bridge php
pack deadbolt-stubs stubs
