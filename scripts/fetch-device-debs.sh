#!/usr/bin/env bash
# For the lent GPU machine, which reaches no package registry: downloads the Debian
# packages pkb builds against (headers, CMake configs and their shared libraries) and
# unpacks them into .deps/root, which `run` carries there (scripts/gpu-check.sh uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(libcli11-dev libtomlplusplus-dev libtomlplusplus3 nlohmann-json3-dev libspdlog-dev libspdlog1.10
      libfmt-dev libfmt9 libcurl4-openssl-dev libgtest-dev)
rm -rf .deps && mkdir -p .deps/debs .deps/root
(cd .deps/debs && apt-get download "${pkgs[@]}" >/dev/null)
for d in .deps/debs/*.deb; do dpkg -x "$d" .deps/root; done
rm -rf .deps/debs
# libcurl's run-time closure, used there only if its system lacks libcurl.so.4.
curl=(libcurl4 libbrotli1 libgnutls30 libgssapi-krb5-2 libhogweed6 libidn2-0 libk5crypto3 libkrb5-3 libkrb5support0
      libldap-2.5-0 libnettle8 libnghttp2-14 libp11-kit0 libpsl5 librtmp1 libsasl2-2 libssh2-1 libtasn1-6 libunistring2)
mkdir -p .deps/debs .deps/curl
(cd .deps/debs && apt-get download "${curl[@]}" >/dev/null 2>&1)
for d in .deps/debs/*.deb; do dpkg -x "$d" .deps/curl; done
rm -rf .deps/debs
du -sh .deps
